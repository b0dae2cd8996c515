package daemon

import (
	"context"

	"codehydra/internal/paths"
	"codehydra/mcp"
	"codehydra/opencode"
)

// The MCP server with its access token, and the OpenCode config that
// points agents at it.

// startMCP serves the MCP server that build made on its port.
func (s *server) startMCP(ctx context.Context) error {
	s.mcpServed = make(chan error, 1)
	go func() { s.mcpServed <- s.mcp.Serve(context.WithoutCancel(ctx)) }()
	return nil
}

// stopMCP stops the MCP server, and waits for Serve when startMCP started
// it.
func (s *server) stopMCP(ctx context.Context) error {
	err := s.mcp.Shutdown(ctx)
	if s.mcpServed != nil {
		if serr := <-s.mcpServed; err == nil {
			err = serr
		}
	}
	return err
}

// workspaceToken gives the MCP token the agent of the workspace at ws
// gets. A worktree whose git registration cannot be read gets none: its
// agent runs, but the MCP server refuses it, and the log says why.
func (s *server) workspaceToken(tok *mcp.Token) func(ws string) string {
	return func(ws string) string {
		t, err := tok.ForWorkspace(ws)
		if err != nil {
			s.log.Warn("the agent gets no MCP token", "path", ws, "err", err)
			return ""
		}
		return t
	}
}

// rotateToken replaces the MCP access token and rewrites the instance file,
// which the command line reads it from. Agents are restarted by the caller.
func (s *server) rotateToken() error {
	if err := s.token.Rotate(); err != nil {
		return err
	}
	s.mcpToken = s.token.Value()
	s.log.Info("MCP access token rotated")
	return s.writeInstanceFile(context.Background())
}

// writeOpencodeConfig is the step before any `opencode serve` starts: each
// agent's start reads the file, and an agent does not start without it.
func (s *server) writeOpencodeConfig(ctx context.Context) error {
	return opencode.WriteConfig(paths.OpencodeConfigFile())
}
