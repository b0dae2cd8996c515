package main

import (
	"context"
	"maps"
	"path/filepath"

	"codehydra/app"
	"codehydra/gateway"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/mcp"
)

// The user's own MCP servers (settings mcpServers), run by the gateway
// that the MCP server offers to every agent as "<server>__<tool>".

// startGateway builds the gateway from the loaded settings before the MCP
// server starts (which offers its tools), and starts the servers marked
// startAtLaunch. It is registered for shutdown first, so it closes after
// the MCP server has stopped and no call can reach a stopped server.
func (s *server) startGateway(context.Context) error {
	gw := gateway.New(gateway.Options{
		Servers:      s.settings.Get().MCPServers,
		Log:          s.log.With("part", "gateway"),
		Confine:      s.confine,
		ConfineProbe: s.confineProbe,
		SharedCaches: filepath.Join(paths.DataDir(), "mcp-server-caches"),
	})
	s.gateway = gw
	s.onShutdown("stop the MCP servers", func(context.Context) error { return gw.Close() })
	gw.Start()
	return nil
}

// mcpGateway is what startMCP gives the MCP server as mcp.Options.Gateway;
// nil (no gateway) until startGateway ran. A nil *gateway.Gateway must
// not reach the interface, where it would not be nil.
func (s *server) mcpGateway() mcp.Gateway {
	if s.gateway == nil {
		return nil
	}
	return s.gateway
}

// gatewaySettings is the settings store as the app sees it: a change of
// mcpServers saved through it (the Settings window's "MCP servers" tab)
// reconfigures the running gateway at once, as no restart is needed for
// it.
type gatewaySettings struct {
	*settings.Store
	gw *gateway.Gateway
}

// Update saves like the store's Update and then hands a changed
// mcpServers to the gateway; a failed save changes nothing.
func (g gatewaySettings) Update(fn func(*settings.Settings)) error {
	var before, after map[string]settings.MCPServer
	err := g.Store.Update(func(s *settings.Settings) {
		before = s.Clone().MCPServers
		fn(s)
		after = s.Clone().MCPServers
	})
	if err != nil {
		return err
	}
	if !maps.EqualFunc(before, after, settings.MCPServer.Equal) {
		g.gw.Reconfigure(after)
	}
	return nil
}

// gatewayStatuses shows the gateway's servers to the app in the app's own
// terms (the app does not import the gateway).
type gatewayStatuses struct{ gw *gateway.Gateway }

func (g gatewayStatuses) Statuses() []app.MCPServerStatus {
	var out []app.MCPServerStatus
	for _, st := range g.gw.Statuses() {
		out = append(out, app.MCPServerStatus{
			Name: st.Name, State: string(st.State), LastError: st.LastError,
			Tools: st.Tools, Calls: st.Calls, Restarts: st.Restarts, Instances: st.Instances,
		})
	}
	return out
}
