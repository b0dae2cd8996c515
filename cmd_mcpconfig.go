package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/mcp"
)

const mcpConfigHelp = `Usage: codehydra mcp-config --client opencode|claude-code|claude-desktop [--workspace PATH]

Prints a configuration for an MCP client outside CodeHydra, with the MCP
server's URL and a token written out, so it works as printed. Without
--workspace it holds your master token, which may call every tool. With
--workspace it holds that workspace's own token and names the workspace
(sent as the X-Workspace-Path header): a client set up so acts on that
workspace only, lists and creates workspaces in its project only, and
cannot add or remove projects. Clients:
  opencode        an opencode.json (project folder or ~/.config/opencode/)
  claude-code     a .mcp.json (project folder)
  claude-desktop  an entry for claude_desktop_config.json; Claude Desktop only
                  starts local (stdio) servers, so it runs the mcp-remote
                  bridge with npx, which needs Node.js
Without --workspace the workspace_* tools answer invalid-input; project_list
and workspace_create (with projectPath) work. The config holds a token: keep
it private, and print it again after "Rotate token", which changes every
token. With a dynamic MCP port (settings
mcpPort 0) the port changes at every launch; set a fixed mcpPort to keep the
config working.

Flags:
  --client NAME     opencode, claude-code or claude-desktop
  --workspace PATH  the workspace the client acts on
  --help            show this help
`

// runMCPConfig is `codehydra mcp-config`.
func runMCPConfig(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("mcp-config", mcpConfigHelp)
	client := fs.String("client", "", "")
	wsFlag := fs.String("workspace", "", "")
	rest, code, ok := parseInterleaved(fs, c, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fs, c, fmt.Errorf("unexpected argument %q", rest[0]))
	}
	if !slices.Contains(mcp.Clients(), *client) {
		return usageError(fs, c, fmt.Errorf("--client must be one of %s", strings.Join(mcp.Clients(), ", ")))
	}
	ws := ""
	if *wsFlag != "" {
		abs, err := filepath.Abs(*wsFlag)
		if err != nil {
			return usageError(fs, c, fmt.Errorf("--workspace: %w", err))
		}
		ws = abs
	}

	src := configSources{workspace: ws}
	var err error
	src.settings, err = settings.Read(paths.SettingsFile())
	if err != nil {
		fmt.Fprintf(c.stderr, "warning: cannot read %s (%v); assuming the default settings\n", paths.SettingsFile(), err)
	}
	src.info, src.running, err = runningInstance()
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %v\n", err)
		return 1
	}
	cfg, ok := src.config(c)
	if !ok {
		return 1
	}
	if ws != "" {
		if cfg, ok = src.forWorkspace(ctx, c, cfg); !ok {
			return 1
		}
	}
	src.warn(c)
	out, err := mcp.RenderClientConfig(*client, cfg)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %v\n", err)
		return 1
	}
	if _, err := c.stdout.Write(out); err != nil {
		return 1
	}
	return 0
}

// configSources are what mcp-config builds a client config from.
type configSources struct {
	settings  settings.Settings
	info      instance.Info // of the running instance, if running
	running   bool
	workspace string // --workspace, absolute; "" for none
}

// config is where a client reaches the MCP server: the running instance's,
// or, when none runs, the one the next launch will have. It says itself
// why there is none (ok false).
func (s configSources) config(c *cli) (cfg mcp.ClientConfig, ok bool) {
	cfg = mcp.ClientConfig{WorkspacePath: s.workspace}
	if s.running {
		cfg.URL, cfg.Token = s.info.MCPURL, s.info.Token
		return cfg, true
	}
	// Without a running instance the config can still be right: a fixed
	// port and the kept token are what the next launch will use.
	token, err := mcp.ReadToken(paths.TokenFile())
	if s.settings.MCPPort != 0 && err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The error names the file, never its content.
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %s, and the kept token cannot be used (%v); start CodeHydra once to replace it\n", notRunning, err)
		return cfg, false
	}
	if s.settings.MCPPort == 0 || err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %s, and the MCP port is not fixed or the token not created yet; the config needs both\n", notRunning)
		return cfg, false
	}
	cfg.URL, cfg.Token = "http://127.0.0.1:"+strconv.Itoa(s.settings.MCPPort)+mcp.Path, token
	fmt.Fprintf(c.stderr, "note: CodeHydra is not running; this config works once it runs (`codehydra` or `codehydra serve`)\n")
	return cfg, true
}

// forWorkspace narrows cfg (which holds the master token) to the
// workspace: its path as CodeHydra registered it (asked of the running
// instance, else with symlinks resolved here) and that workspace's own
// token, derived from the master token as the server derives it.
func (s configSources) forWorkspace(ctx context.Context, c *cli, cfg mcp.ClientConfig) (mcp.ClientConfig, bool) {
	path := s.workspace
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if s.running {
		if registered, err := registeredPath(ctx, s.info, s.workspace); err != nil {
			fmt.Fprintf(c.stderr, "warning: %v; this config works only once %s is a workspace of CodeHydra\n", err, s.workspace)
		} else {
			path = registered
		}
	}
	tok, err := mcp.WorkspaceToken(cfg.Token, path)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %v\n", err)
		return cfg, false
	}
	cfg.WorkspacePath, cfg.Token = path, tok
	return cfg, true
}

// warn says when the config will stop working (a dynamic or moved port)
// or does not reach a workspace.
func (s configSources) warn(c *cli) {
	switch {
	case s.settings.MCPPort == 0:
		fmt.Fprintf(c.stderr, "warning: the MCP port is dynamic (settings mcpPort is 0), so it changes at every launch and this config stops working when CodeHydra restarts; set a fixed \"mcpPort\" in %s\n", paths.SettingsFile())
	case s.running && s.info.MCPPort != s.settings.MCPPort:
		fmt.Fprintf(c.stderr, "warning: CodeHydra runs on port %d because the configured port %d was taken; this config stops working when it restarts\n", s.info.MCPPort, s.settings.MCPPort)
	}
	if s.workspace == "" {
		fmt.Fprintf(c.stderr, "note: no --workspace: the config holds your master token, which may call every tool; workspace_* tools will answer invalid-input\n")
	}
}

// registeredPath asks the running instance which workspace ws is, so that
// the token is derived from the path the server knows it by, and a typo
// shows now rather than as refused calls later.
func registeredPath(ctx context.Context, info instance.Info, ws string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: ws, Version: version})
	if err != nil {
		return "", fmt.Errorf("could not check the workspace: %w", err)
	}
	defer r.Close()
	raw, err := r.Call(ctx, mcp.ToolGetStatus, nil)
	if err != nil {
		return "", err
	}
	var st struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Path == "" {
		return "", fmt.Errorf("could not check the workspace: %s answered %s", mcp.ToolGetStatus, raw)
	}
	return st.Path, nil
}
