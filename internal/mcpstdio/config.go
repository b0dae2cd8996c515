package mcpstdio

import (
	"fmt"
	"os"
	"path/filepath"

	"codehydra/mcp"
)

// ClientConfig is client's config that runs this binary's mcp-stdio
// for workspace ("" for the user's own client), as the command line
// prints it.
func ClientConfig(client, workspace string) (string, error) {
	exe, err := ExecutablePath()
	if err != nil {
		return "", err
	}
	return ClientConfigFor(exe, client, workspace)
}

// ClientConfigFor is client's config that runs program's mcp-stdio for
// workspace: the tray (the GUI program) names the core program beside
// it, which links no GUI toolkit and starts fastest.
func ClientConfigFor(program, client, workspace string) (string, error) {
	b, err := mcp.RenderClientConfig(client, mcp.ClientConfig{Command: program, WorkspacePath: workspace})
	return string(b), err
}

// ExecutablePath is this binary's absolute path, symlinks resolved, for a
// config to run: a client starts it with no PATH of the user's shell.
func ExecutablePath() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find this program's path: %w", err)
	}
	return exe, nil
}
