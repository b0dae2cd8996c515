package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/mcp"
)

// The commands project, workspace and mcp-config act on the running
// instance through its MCP server, as any other MCP client would; they
// never touch the app's state directly. This file holds what they share.

// remoteTimeout bounds one command against the running instance.
const remoteTimeout = 2 * time.Minute

const notRunning = "CodeHydra is not running; start it with `codehydra` or `codehydra serve`"

// callRemote calls one tool of the running instance, with wsPath as
// X-Workspace-Path when set, and decodes the result into out (if not nil).
// It prints what went wrong itself and returns a non-zero exit code then.
func callRemote(ctx context.Context, c *cli, wsPath, tool string, args any, out any) (json.RawMessage, int) {
	info, running, err := runningInstance()
	if err != nil {
		fmt.Fprintf(c.stderr, "error: %v\n", err)
		return nil, 1
	}
	if !running {
		fmt.Fprintln(c.stderr, notRunning)
		return nil, 1
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: wsPath, Version: Version})
	if err != nil {
		fmt.Fprintf(c.stderr, "error: cannot reach CodeHydra's MCP server: %v\n(if CodeHydra was just restarted or its token rotated, try again; `codehydra status` shows the instance)\n", err)
		return nil, 1
	}
	defer r.Close()
	raw, err := r.Call(ctx, tool, args)
	if err != nil {
		fmt.Fprintf(c.stderr, "error: %v\n", err)
		return nil, 1
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			fmt.Fprintf(c.stderr, "error: unexpected answer from %s: %v\n", tool, err)
			return nil, 1
		}
	}
	return raw, 0
}

// runningInstance is the running instance the remote commands talk to;
// running is false when none runs. A running instance without an MCP
// server is an error.
func runningInstance() (info instance.Info, running bool, err error) {
	info, running, err = instance.Running(paths.InstanceFile(), paths.LockFile())
	if err != nil || !running {
		return info, false, err
	}
	if info.MCPURL == "" || info.Token == "" {
		return info, false, fmt.Errorf("CodeHydra runs (pid %d) without an MCP server; see its log (%s) and restart it", info.PID, paths.LogFile())
	}
	return info, true, nil
}

// absPath is filepath.Abs with "" meaning the current folder.
func absPath(p string) (string, error) {
	if p == "" {
		p = "."
	}
	return filepath.Abs(p)
}

// samePath reports whether a (as the user typed it) names b (as the
// instance reports it: absolute, symlinks resolved).
func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// printJSON prints the JSON raw indented, as every --json output is.
func printJSON(c *cli, raw []byte) int {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(c.stderr, "error: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}
