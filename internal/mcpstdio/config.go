package mcpstdio

import (
	"fmt"
	"os"
	"path/filepath"

	"codehydra/internal/paths"
	"codehydra/mcp"
)

// ClientConfig is client's config that runs this binary's mcp-stdio
// for workspace ("" for the user's own client), as the tray copies it.
func ClientConfig(client, workspace string) (string, error) {
	exe, err := ExecutablePath()
	if err != nil {
		return "", err
	}
	b, err := mcp.RenderClientConfig(client, mcp.ClientConfig{Command: exe, WorkspacePath: workspace})
	return string(b), err
}

// ExecutablePath is the path of the program a config runs, symlinks
// resolved (a client starts it with no PATH of the user's shell): the
// core program, which links no GUI toolkit and starts fastest, when it is
// beside this one (always, but in tests), else this binary.
func ExecutablePath() (string, error) {
	if core, err := paths.Program(paths.Core); err == nil {
		return core, nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find this program's path: %w", err)
	}
	return exe, nil
}
