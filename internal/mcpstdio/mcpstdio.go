// Package mcpstdio is the transport behind `codehydra mcp-stdio`: an MCP
// server on stdin and stdout that forwards every message to the running
// CodeHydra's streamable HTTP endpoint (bridge.go, session.go), and the
// client configs that run it (config.go).
package mcpstdio

import (
	"context"
	"io"
)

// Target is where the bridge forwards to.
type Target struct {
	URL, Token string
	Workspace  string // sent as X-Workspace-Path; "" for none
}

// Run forwards the client's messages from in (one a line) to the target
// that find names, which it asks again whenever it opens a session, and
// writes the answers to out; it returns the exit code once in closes.
func Run(ctx context.Context, in io.Reader, out, stderr io.Writer, find func() (Target, error)) int {
	return newBridge(out, stderr, find).run(ctx, in)
}
