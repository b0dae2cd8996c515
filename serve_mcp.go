package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/time/rate"

	"codehydra/internal/paths"
	"codehydra/mcp"
	"codehydra/opencode"
	"codehydra/workspace"
)

// Steps 2 and 3 of a run: the MCP server with its access token, then the
// OpenCode config that points agents at it.

// startMCP is step 2 (DESIGN.md "Shape"): the access token, then the MCP
// server bound once on 127.0.0.1:<mcpPort> (a taken fixed port falls back to
// a dynamic one, which the instance file then shows).
func (s *server) startMCP(ctx context.Context) error {
	tok, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		return fmt.Errorf("load the MCP access token: %w", err)
	}
	set := s.settings.Get()
	srv, err := mcp.New(mcp.Options{
		Addr:           net.JoinHostPort("127.0.0.1", strconv.Itoa(set.MCPPort)),
		Token:          tok,
		Workspaces:     mcp.LimitCreates(s.manager, mcp.CreateLimit{Count: set.WorkspaceCreateLimit.Count, Per: set.WorkspaceCreateLimit.Window(), Descendants: set.WorkspaceCreateLimit.Descendants}),
		Agents:         s.agentPorts,
		Prompts:        s.agentPorts,
		Sessions:       agentSessions{s.agentPorts},
		Gateway:        s.mcpGateway(),
		RateLimit:      rate.Limit(set.RateLimit.PerSecond),
		Burst:          set.RateLimit.Burst,
		CallTimeout:    set.ToolTimeout(),
		TaskTimeout:    set.TaskTimeout(),
		Confine:        s.confine,
		SessionIdle:    set.MCPSessionIdle(),
		MaxSessions:    set.MCPMaxSessions,
		MaxConnections: set.MCPMaxConnections,
		WorkspaceDeny:  set.WorkspaceDeny,
		Subscribe:      s.manager.Subscribe,
		AuditPath:      paths.AuditFile(),
		Logger:         s.log,
		Version:        version,
		TracerProvider: s.tel.tracerProvider(),
		MeterProvider:  s.tel.meterProvider(),
	})
	if err != nil {
		return err
	}
	if err := srv.SetAuditRotation(set.LogMaxBytes()); err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx) }()
	s.mcp, s.token = srv, tok
	s.mcpURL, s.mcpPort, s.mcpToken = srv.URL(), srv.Port(), tok.Value()
	s.onShutdown("stop the MCP server", func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		cancel()
		if serr := <-done; err == nil {
			err = serr
		}
		return err
	})
	return nil
}

// agentSessions answers the MCP server's orchestration tools from the
// supervisor that agentPorts forwards to once startAgents has set it;
// until then there is no agent to read or restart.
type agentSessions struct{ ports *agentPorts }

func (a agentSessions) sup() (mcp.AgentSessions, bool) {
	a.ports.mu.RLock()
	defer a.ports.mu.RUnlock()
	s, ok := a.ports.src.(mcp.AgentSessions)
	return s, ok
}

func (a agentSessions) PromptDelivery(path string) (workspace.PromptDelivery, bool) {
	if s, ok := a.sup(); ok {
		return s.PromptDelivery(path)
	}
	return workspace.PromptDelivery{}, false
}

func (a agentSessions) CurrentSession(ctx context.Context, path string) (string, error) {
	if s, ok := a.sup(); ok {
		return s.CurrentSession(ctx, path)
	}
	return "", nil
}

func (a agentSessions) LastReply(ctx context.Context, path string) (string, bool, error) {
	if s, ok := a.sup(); ok {
		return s.LastReply(ctx, path)
	}
	return "", false, nil
}

func (a agentSessions) Restart(path string) error {
	if s, ok := a.sup(); ok {
		return s.Restart(path)
	}
	return errors.New("restart agent: the agents have not started yet")
}

var _ mcp.AgentSessions = (*opencode.Supervisor)(nil)

// rotateToken replaces the MCP access token and rewrites the instance file,
// which the command line reads it from. Agents are restarted by the caller.
func (s *server) rotateToken() error {
	if s.token == nil {
		return errors.New("no MCP server runs")
	}
	if err := s.token.Rotate(); err != nil {
		return err
	}
	s.mcpToken = s.token.Value()
	s.log.Info("MCP access token rotated")
	return s.writeInstanceFile(context.Background())
}

// writeOpencodeConfig is step 3, before any `opencode serve` starts (OpenCode
// does not reconnect to an MCP server that was down when it started).
func (s *server) writeOpencodeConfig(ctx context.Context) error {
	return opencode.WriteConfig(paths.OpencodeConfigFile())
}
