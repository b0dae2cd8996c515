package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"codehydra/internal/mcpstdio"
	"codehydra/mcp"
)

const mcpStdioHelp = `Usage: codehydra mcp-stdio [--workspace PATH]

An MCP server on standard input and output for MCP clients that start a
command (Claude Code, Claude Desktop, opencode's "local" servers). It finds
the running CodeHydra (its instance file) and its token each time it starts,
and forwards every message to CodeHydra's MCP server, so a client's config
names only this command: no port and no token, which change when CodeHydra
restarts or the token is rotated. When CodeHydra restarts, or closes an idle
session, while the client runs, the next message opens a new session.
Clients of protocol 2026-07-28, which open no session, pass through too:
each request goes on its own.

Without --workspace the client acts as you, with your master token: every
tool, on every project; workspace_* tools answer invalid-input. With
--workspace it sends that workspace's own token and path: the client acts on
that workspace only.

` + "`codehydra mcp-config --client NAME`" + ` prints a config that runs this command.

Flags:
  --workspace PATH  the workspace the client acts on
  --help            show this help
`

// runMCPStdio is `codehydra mcp-stdio`.
func runMCPStdio(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("mcp-stdio", mcpStdioHelp)
	wsFlag := fs.String("workspace", "", "")
	if code, ok := parseFlags(fs, c, args); !ok {
		return code
	}
	ws := ""
	if *wsFlag != "" {
		abs, err := filepath.Abs(*wsFlag)
		if err != nil {
			return usageError(fs, c, fmt.Errorf("--workspace: %w", err))
		}
		// The server knows a workspace by its real path; the token is
		// derived from that.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		ws = abs
	}
	return mcpstdio.Run(ctx, c.stdin, c.stdout, c.stderr, func() (mcpstdio.Target, error) { return findTarget(ws) })
}

// findTarget is where mcp-stdio forwards to now: the running instance's
// MCP server, with the master token, or with ws's own token when ws is
// set.
func findTarget(ws string) (mcpstdio.Target, error) {
	info, running, err := runningInstance()
	if err != nil {
		return mcpstdio.Target{}, err
	}
	if !running {
		return mcpstdio.Target{}, fmt.Errorf("%s", notRunning)
	}
	t := mcpstdio.Target{URL: info.MCPURL, Token: info.Token, Workspace: ws}
	if ws != "" {
		token, err := clientWorkspaceToken(info.Token, ws)
		if err != nil {
			return mcpstdio.Target{}, fmt.Errorf("the token of %s: %w", ws, err)
		}
		t.Token = token
	}
	return t, nil
}

// clientWorkspaceToken is the token a client outside CodeHydra sends for
// the workspace at path (absolute, symlinks resolved), derived from the
// master token as the server derives it. It is the one place mcp-stdio
// computes a workspace token, so that a change of that derivation is made
// here.
func clientWorkspaceToken(master, path string) (string, error) {
	return mcp.WorkspaceToken(master, path)
}
