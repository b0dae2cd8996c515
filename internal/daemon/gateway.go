package daemon

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"codehydra/gateway"
	"codehydra/internal/settings"
)

// The user's own MCP servers (settings mcpServers), run by the gateway
// that the MCP server offers to every agent as "<server>__<tool>".

// startGateway starts the servers marked startAtLaunch; the others start
// at their first call.
func (s *server) startGateway(context.Context) error {
	s.gateway.Start()
	return nil
}

// workspaceVars are the workspace variables of a workspace-scoped MCP
// server's instance for the workspace at path ({workspace.name} …), read
// from the manager when the instance starts.
func (s *server) workspaceVars(_ context.Context, path string) (settings.WorkspaceVars, error) {
	ws, err := s.manager.Resolve(path)
	if err != nil {
		return settings.WorkspaceVars{}, err
	}
	return settings.WorkspaceVars{Path: ws.Path, Name: ws.Name, Branch: ws.Branch, ProjectPath: ws.ProjectPath}, nil
}

// serversChoice names the MCP servers the workspace at path does not see,
// with why: those its project's settings leave out
// (projectSetup[project].mcpServers), and those the user switched off for
// it in the tray (workspace.MetadataMCPOff).
func (s *server) serversChoice(ctx context.Context, path string) (map[string]string, error) {
	ws, err := s.manager.Resolve(path)
	if err != nil {
		return nil, err
	}
	set := s.settings.Get()
	proj := set.ProjectOf(ws.ProjectPath)
	off := map[string]string{}
	for name := range set.MCPServers {
		if !proj.Offers(name) {
			off[name] = fmt.Sprintf("the MCP server %s is not among those this workspace's project offers (settings: projectSetup[%q].mcpServers); only the user can change that, in the settings file", name, ws.ProjectPath)
		}
	}
	names, err := s.manager.MCPServersOff(ctx, path)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, ok := off[name]; !ok {
			off[name] = fmt.Sprintf("the MCP server %s is switched off for this workspace; the user can switch it on in the tray (the workspace's submenu, MCP servers)", name)
		}
	}
	return off, nil
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
	var before, after settings.Settings
	err := g.Store.Update(func(s *settings.Settings) {
		before = s.Clone()
		fn(s)
		after = s.Clone()
	})
	if err != nil {
		return err
	}
	servers := !maps.EqualFunc(before.MCPServers, after.MCPServers, settings.MCPServer.Equal)
	if servers {
		g.gw.Reconfigure(after.MCPServers)
	}
	if servers || !maps.EqualFunc(before.ProjectSetup, after.ProjectSetup, func(a, b settings.ProjectSetup) bool {
		return slices.Equal(a.MCPServers, b.MCPServers) && (a.MCPServers == nil) == (b.MCPServers == nil)
	}) {
		g.gw.Rechoose("") // which servers each workspace sees may have changed
	}
	return nil
}
