// Package paths names the files CodeHydra keeps, as docs/DESIGN.md lists them,
// and finds its two programs.
// Every path comes from github.com/adrg/xdg, so tests isolate the app by
// setting XDG_* variables and calling xdg.Reload (see Reload).
package paths

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/adrg/xdg"
)

const app = "codehydra"

// Reload re-reads the XDG_* environment variables. Tests that change them
// with t.Setenv call it afterwards.
func Reload() { xdg.Reload() }

// SettingsFile is $XDG_CONFIG_HOME/codehydra/settings.json.
func SettingsFile() string { return filepath.Join(xdg.ConfigHome, app, "settings.json") }

// OpencodeConfigFile is $XDG_DATA_HOME/codehydra/opencode/codehydra-mcp.json.
func OpencodeConfigFile() string {
	return filepath.Join(xdg.DataHome, app, "opencode", "codehydra-mcp.json")
}

// ProjectsDir is $XDG_DATA_HOME/codehydra/projects, the default worktree root.
func ProjectsDir() string { return filepath.Join(xdg.DataHome, app, "projects") }

// ToolsDir is $XDG_DATA_HOME/codehydra/tools, where `make run` installs
// opencode (as node_modules/.bin/opencode) when it is not on PATH.
func ToolsDir() string { return filepath.Join(xdg.DataHome, app, "tools") }

// TokenFile is $XDG_STATE_HOME/codehydra/token (0600).
func TokenFile() string { return filepath.Join(xdg.StateHome, app, "token") }

// LogFile is $XDG_STATE_HOME/codehydra/codehydra.log.
func LogFile() string { return filepath.Join(xdg.StateHome, app, "codehydra.log") }

// AuditFile is $XDG_STATE_HOME/codehydra/audit.jsonl.
func AuditFile() string { return filepath.Join(xdg.StateHome, app, "audit.jsonl") }

// AgentsDir is $XDG_STATE_HOME/codehydra/agents, one record per running agent.
func AgentsDir() string { return filepath.Join(xdg.StateHome, app, "agents") }

// MCPServersDir is $XDG_STATE_HOME/codehydra/mcp-servers, one record per
// running stdio MCP server of the gateway (reaped like the agents').
func MCPServersDir() string { return filepath.Join(xdg.StateHome, app, "mcp-servers") }

// TaskRunsDir is $XDG_STATE_HOME/codehydra/task-runs, one record per
// running background task (reaped like the agents').
func TaskRunsDir() string { return filepath.Join(xdg.StateHome, app, "task-runs") }

// MCPWorkDirs is $XDG_DATA_HOME/codehydra/mcp-wd (0700), which holds the
// empty folder the gateway's workspace-scoped MCP servers start in.
func MCPWorkDirs() string { return filepath.Join(DataDir(), "mcp-wd") }

// MCPPinsFile is $XDG_STATE_HOME/codehydra/mcp-pins.json (0600): the
// definitions of the gateway's tools as first seen or last accepted.
func MCPPinsFile() string { return filepath.Join(xdg.StateHome, app, "mcp-pins.json") }

// RuntimeDir is $XDG_RUNTIME_DIR/codehydra. When XDG_RUNTIME_DIR is unset
// and xdg's fallback /run/user/<uid> does not exist (no systemd login, CI,
// containers), it is <temp>/codehydra-<uid>; internal/instance checks that
// such a folder is ours and private before using it.
func RuntimeDir() string {
	if os.Getenv("XDG_RUNTIME_DIR") == "" {
		if _, err := os.Stat(xdg.RuntimeDir); err != nil {
			return filepath.Join(os.TempDir(), app+"-"+strconv.Itoa(os.Getuid()))
		}
	}
	return filepath.Join(xdg.RuntimeDir, app)
}

// InstanceFile is $XDG_RUNTIME_DIR/codehydra/instance.json (0600).
func InstanceFile() string { return filepath.Join(RuntimeDir(), "instance.json") }

// LockFile is $XDG_RUNTIME_DIR/codehydra/lock, held by the running instance.
func LockFile() string { return filepath.Join(RuntimeDir(), "lock") }

// ConfigDir is $XDG_CONFIG_HOME/codehydra, which holds the settings.
func ConfigDir() string { return filepath.Join(xdg.ConfigHome, app) }

// DataDir is $XDG_DATA_HOME/codehydra: the OpenCode config, the default
// worktree root, the tools and the workspaces' temporary folders.
func DataDir() string { return filepath.Join(xdg.DataHome, app) }

// StateDir is $XDG_STATE_HOME/codehydra: the token, the logs, the records.
func StateDir() string { return filepath.Join(xdg.StateHome, app) }

// WorkspaceTempRoot is $XDG_DATA_HOME/codehydra/tmp, which holds one
// temporary folder (TMPDIR) per confined workspace; see WorkspaceTemp.
func WorkspaceTempRoot() string { return filepath.Join(DataDir(), "tmp") }

// OpencodeConfigDir is opencode's own config folder.
func OpencodeConfigDir() string { return filepath.Join(xdg.ConfigHome, "opencode") }

// OpencodeDirs are opencode's own folders (data, state, config, cache),
// which its agents write.
func OpencodeDirs() []string {
	return []string{
		filepath.Join(xdg.DataHome, "opencode"), filepath.Join(xdg.StateHome, "opencode"),
		OpencodeConfigDir(), filepath.Join(xdg.CacheHome, "opencode"),
	}
}

// Core and GUI name CodeHydra's two programs, which sit side by side: the
// core (the command line, serve and every helper it starts), which links
// no GUI toolkit, and the GUI program (the tray app and its windows),
// which the core's default command hands over to.
const (
	Core = "codehydra"
	GUI  = "codehydra-gui"
)

// Program is the path of CodeHydra's program name (Core or GUI) in the
// folder of the running one, symlinks resolved (a link to codehydra in
// ~/bin finds the folder it points to); the error names where it looked
// when it is not there.
func Program(name string) (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("find this program's folder: %w", err)
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	path := filepath.Join(filepath.Dir(exe), name)
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return path, nil
}
