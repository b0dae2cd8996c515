package cli

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
	"codehydra/internal/mcpstdio"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/mcp"
	"codehydra/workspace"
)

const mcpConfigHelp = `Usage: codehydra mcp-config --client opencode|claude-code|claude-desktop [--workspace PATH] [--http]

Prints a configuration for an MCP client outside CodeHydra. The config runs
this codehydra binary as "codehydra mcp-stdio", which finds the running
CodeHydra each time the client starts it: the config holds neither port nor
token, keeps working when CodeHydra restarts or the token is rotated, and
needs nothing else installed (no Node.js, no bridge).

Without --workspace the client acts as you (your master token): every
tool, on every project; workspace_* tools answer invalid-input. With
--workspace it acts on that workspace only (that workspace's own token,
the workspace named as X-Workspace-Path): it lists and creates workspaces
in its project only, and cannot add or remove projects.

Clients:
  opencode        an opencode.json (project folder or ~/.config/opencode/)
  claude-code     a .mcp.json (project folder)
  claude-desktop  an entry for claude_desktop_config.json

--http prints the URL and a token instead, for clients that cannot start a
command. It needs a fixed MCP port (settings "mcpPort"): with the default,
dynamic port, the URL would change at every launch. The token is written
out, so keep the file private, and print it again after "Rotate token".
Claude Desktop starts only commands, so it has no HTTP form.

Flags:
  --client NAME     opencode, claude-code or claude-desktop
  --workspace PATH  the workspace the client acts on
  --http            print the URL and a token instead of the command
  --help            show this help
`

// runMCPConfig is `codehydra mcp-config`.
func runMCPConfig(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet("mcp-config", mcpConfigHelp)
	client := fs.String("client", "", "")
	wsFlag := fs.String("workspace", "", "")
	useHTTP := fs.Bool("http", false, "")
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
	if *useHTTP && *client == mcp.ClientClaudeDesktop {
		return usageError(fs, c, errors.New("claude-desktop starts only commands, so it has no HTTP form; leave out --http"))
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
	var cfg mcp.ClientConfig
	if *useHTTP {
		cfg, ok = src.httpConfig(ctx, c)
	} else {
		cfg, ok = src.stdioConfig(ctx, c)
	}
	if !ok {
		return 1
	}
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

// stdioConfig is the config that runs this binary's mcp-stdio.
func (s configSources) stdioConfig(ctx context.Context, c *cli) (mcp.ClientConfig, bool) {
	exe, err := mcpstdio.ExecutablePath()
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %v\n", err)
		return mcp.ClientConfig{}, false
	}
	cfg := mcp.ClientConfig{Command: exe}
	if s.workspace != "" {
		path, warning := s.workspacePath(ctx)
		// mcp-stdio derives the token at each start; a folder that cannot
		// have one (the project's main checkout) is refused now, not then.
		if _, err := workspace.TokenNonce(path); err != nil {
			fmt.Fprintf(c.stderr, "codehydra mcp-config: %s cannot be a workspace (it must be a linked git worktree of a project): %v\n", path, err)
			return mcp.ClientConfig{}, false
		}
		cfg.WorkspacePath = path
		sayWarning(c, warning)
	}
	if !s.running {
		fmt.Fprintln(c.stderr, "note: CodeHydra is not running; this config works whenever it runs (`codehydra` or `codehydra serve`)")
	}
	if s.workspace == "" {
		fmt.Fprintln(c.stderr, "note: no --workspace: the client acts as you and may call every tool; workspace_* tools will answer invalid-input")
	}
	return cfg, true
}

// httpConfig is the config that holds the URL and a token, which only a
// fixed port keeps working.
func (s configSources) httpConfig(ctx context.Context, c *cli) (mcp.ClientConfig, bool) {
	if s.settings.MCPPort == 0 {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: --http needs a fixed MCP port: the port is dynamic (settings mcpPort is 0), so it changes at every launch and a URL would stop working; set a fixed \"mcpPort\" in %s, or leave out --http for a config that runs codehydra mcp-stdio\n", paths.SettingsFile())
		return mcp.ClientConfig{}, false
	}
	cfg, ok := s.config(c)
	if !ok {
		return cfg, false
	}
	if s.workspace != "" {
		if cfg, ok = s.forWorkspace(ctx, c, cfg); !ok {
			return cfg, false
		}
	}
	s.warn(c)
	return cfg, true
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
	path, warning := s.workspacePath(ctx)
	tok, err := mcp.WorkspaceToken(cfg.Token, path)
	if err != nil {
		fmt.Fprintf(c.stderr, "codehydra mcp-config: %s cannot be a workspace (it must be a linked git worktree of a project): %v\n", path, err)
		return cfg, false
	}
	sayWarning(c, warning)
	cfg.WorkspacePath, cfg.Token = path, tok
	return cfg, true
}

// workspacePath is the workspace as CodeHydra registered it (asked of the
// running instance, else with symlinks resolved here), and a warning
// when the running instance does not know it: said only once the folder
// is known to be able to have a workspace token, so that a refusal is not
// preceded by a warning about a config that is not printed.
func (s configSources) workspacePath(ctx context.Context) (path, warning string) {
	path = s.workspace
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if s.running {
		if registered, err := registeredPath(ctx, s.info, s.workspace); err != nil {
			warning = fmt.Sprintf("warning: %v; this config works only once %s is a workspace of CodeHydra", err, s.workspace)
		} else {
			path = registered
		}
	}
	return path, warning
}

// sayWarning prints warning, if any, on stderr.
func sayWarning(c *cli, warning string) {
	if warning != "" {
		fmt.Fprintln(c.stderr, warning)
	}
}

// warn says when an HTTP config will stop working (a moved port) or does
// not reach a workspace.
func (s configSources) warn(c *cli) {
	if s.running && s.info.MCPPort != s.settings.MCPPort {
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
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: ws, Version: Version})
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
