package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// RealMCPServer returns the program of a real third-party MCP server that
// build/setup.sh installs beside opencode (bin is its npm binary's name:
// "mcp-server-everything", "mcp-server-filesystem"). Like RealOpencode it
// skips in -short mode and ends the test through CannotRun
// (RequireOpencodeEnv, which make test sets) when the server is missing.
func RealMCPServer(t testing.TB, bin string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real MCP server, skipped in -short mode")
	}
	dir := filepath.Dir(machineOpencode())
	if oc := os.Getenv(OpencodeEnv); oc != "" {
		dir = filepath.Dir(oc)
	}
	path := filepath.Join(dir, bin)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		CannotRun(t, RequireOpencodeEnv, "real MCP server %s not found at %s: run `make setup` (installs it there)", bin, path)
	}
	return path
}
