package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// The commands here act on the running instance through its MCP server, as
// any other MCP client would; they never touch the app's state directly.

// remoteTimeout bounds one command against the running instance.
const remoteTimeout = 2 * time.Minute

const notRunning = "CodeHydra is not running; start it with `codehydra` or `codehydra serve`"

const mcpConfigHelp = `Usage: codehydra mcp-config --client opencode|claude-code|claude-desktop [--workspace PATH]

Prints a configuration for an MCP client outside CodeHydra, with the MCP
server's URL, the access token and, with --workspace, the workspace the
client acts on (sent as the X-Workspace-Path header) written out, so it
works as printed:
  opencode        an opencode.json (project folder or ~/.config/opencode/)
  claude-code     a .mcp.json (project folder)
  claude-desktop  an entry for claude_desktop_config.json; Claude Desktop only
                  starts local (stdio) servers, so it runs the mcp-remote
                  bridge with npx, which needs Node.js
Without --workspace the workspace_* tools answer invalid-input; project_list
and workspace_create work. The config holds the token: keep it private, and
print it again after "Rotate token". With a dynamic MCP port (settings
mcpPort 0) the port changes at every launch; set a fixed mcpPort to keep the
config working.

Flags:
  --client NAME     opencode, claude-code or claude-desktop
  --workspace PATH  the workspace the client acts on
  --help            show this help
`

const projectHelp = `Usage:
  codehydra project list [--json]
  codehydra project add PATH
  codehydra project remove PATH

Lists, adds or removes the projects (git repositories) of the running
CodeHydra, through its MCP server. Removing a project deletes no file.

Flags:
  --json   print the list as JSON
  --help   show this help
`

const workspaceHelp = `Usage:
  codehydra workspace list [--project PATH] [--json]
  codehydra workspace create NAME [--project PATH] [--base REF] [--json]
  codehydra workspace delete PATH [--keep-branch]

Lists, creates or deletes workspaces (git worktrees, each with its own
agent) of the running CodeHydra, through its MCP server. create makes branch
NAME from REF (default: the project's default branch) in the project at PATH
(default: the current folder). delete stops the workspace's agent, removes
its worktree (uncommitted changes are lost) and its branch unless
--keep-branch; it runs in the background.

Flags:
  --project PATH   the project (default: the current folder)
  --base REF       branch or commit the new workspace starts from
  --keep-branch    keep the branch when deleting
  --json           print the result as JSON
  --help           show this help
`

// runMCPConfig is `codehydra mcp-config`.
func runMCPConfig(args []string, stdout, stderr io.Writer) int {
	fl := remoteFlagSet("mcp-config", mcpConfigHelp)
	client := fl.String("client", "", "")
	wsFlag := fl.String("workspace", "", "")
	rest, code, ok := parseInterleaved(fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(fl, stderr, fmt.Errorf("unexpected argument %q", rest[0]))
	}
	if !slices.Contains(mcp.Clients(), *client) {
		return usageError(fl, stderr, fmt.Errorf("--client must be one of %s", strings.Join(mcp.Clients(), ", ")))
	}
	ws := ""
	if *wsFlag != "" {
		abs, err := filepath.Abs(*wsFlag)
		if err != nil {
			return usageError(fl, stderr, fmt.Errorf("--workspace: %w", err))
		}
		ws = abs
	}

	set := readSettings(stderr)
	info, running, err := runningInstance()
	if err != nil {
		fmt.Fprintf(stderr, "codehydra mcp-config: %v\n", err)
		return 1
	}
	cfg := mcp.ClientConfig{WorkspacePath: ws}
	if running {
		cfg.URL, cfg.Token = info.MCPURL, info.Token
	} else {
		// Without a running instance the config can still be right: a fixed
		// port and the kept token are what the next launch will use.
		token, err := readToken()
		if set.MCPPort == 0 || err != nil {
			fmt.Fprintf(stderr, "codehydra mcp-config: %s, and the MCP port is not fixed or the token not created yet; the config needs both\n", notRunning)
			return 1
		}
		cfg.URL, cfg.Token = "http://127.0.0.1:"+strconv.Itoa(set.MCPPort)+mcp.Path, token
		fmt.Fprintf(stderr, "note: CodeHydra is not running; this config works once it runs (`codehydra` or `codehydra serve`)\n")
	}

	switch {
	case set.MCPPort == 0:
		fmt.Fprintf(stderr, "warning: the MCP port is dynamic (settings mcpPort is 0), so it changes at every launch and this config stops working when CodeHydra restarts; set a fixed \"mcpPort\" in %s\n", paths.SettingsFile())
	case running && info.MCPPort != set.MCPPort:
		fmt.Fprintf(stderr, "warning: CodeHydra runs on port %d because the configured port %d was taken; this config stops working when it restarts\n", info.MCPPort, set.MCPPort)
	}
	if ws == "" {
		fmt.Fprintf(stderr, "note: no --workspace: workspace_* tools will answer invalid-input; project_list and workspace_create work\n")
	} else if running {
		warnIfNotWorkspace(info, ws, stderr)
	}

	out, err := mcp.RenderClientConfig(*client, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "codehydra mcp-config: %v\n", err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		return 1
	}
	return 0
}

// warnIfNotWorkspace asks the running instance whether ws resolves, so that
// a typo shows now rather than as failing tool calls later.
func warnIfNotWorkspace(info instance.Info, ws string, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: ws, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "warning: could not check the workspace: %v\n", err)
		return
	}
	defer r.Close()
	if _, err := r.Call(ctx, mcp.ToolGetStatus, nil); err != nil {
		fmt.Fprintf(stderr, "warning: %v; workspace_* tools will fail with this --workspace\n", err)
	}
}

// runProject is `codehydra project add|remove|list`.
func runProject(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := remoteFlagSet("project", projectHelp)
	asJSON := fl.Bool("json", false, "")
	rest, code, ok := parseInterleaved(fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) == 0 {
		return usageError(fl, stderr, errors.New("say list, add or remove"))
	}
	switch sub := rest[0]; sub {
	case "list":
		if len(rest) != 1 {
			return usageError(fl, stderr, fmt.Errorf("unexpected argument %q", rest[1]))
		}
		var out projectList
		raw, code := callRemote(ctx, stderr, "", mcp.ToolProjectList, nil, &out)
		if code != 0 {
			return code
		}
		if *asJSON {
			return printJSON(stdout, stderr, raw)
		}
		if len(out.Projects) == 0 {
			fmt.Fprintln(stdout, "no projects; add one with `codehydra project add PATH`")
		}
		for _, p := range out.Projects {
			fmt.Fprintf(stdout, "%s\t%s\n", p.Name, p.Path)
			for _, w := range p.Workspaces {
				fmt.Fprintf(stdout, "  %s\t%s\n", w.Name, w.Path)
			}
		}
		return 0
	case "add", "remove":
		if len(rest) != 2 {
			return usageError(fl, stderr, fmt.Errorf("project %s takes one PATH", sub))
		}
		path, err := filepath.Abs(rest[1])
		if err != nil {
			return usageError(fl, stderr, err)
		}
		if sub == "add" {
			var p struct{ Name, Path string }
			if _, code := callRemote(ctx, stderr, "", mcp.ToolProjectAdd, map[string]any{"path": path}, &p); code != 0 {
				return code
			}
			fmt.Fprintf(stdout, "added project %s (%s)\n", p.Name, p.Path)
			return 0
		}
		if _, code := callRemote(ctx, stderr, "", mcp.ToolProjectRemove, map[string]any{"path": path}, nil); code != 0 {
			return code
		}
		fmt.Fprintf(stdout, "removed project %s (no file was deleted)\n", path)
		return 0
	default:
		return usageError(fl, stderr, fmt.Errorf("unknown project command %q", sub))
	}
}

// runWorkspace is `codehydra workspace create|list|delete`.
func runWorkspace(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := remoteFlagSet("workspace", workspaceHelp)
	project := fl.String("project", "", "")
	base := fl.String("base", "", "")
	keepBranch := fl.Bool("keep-branch", false, "")
	asJSON := fl.Bool("json", false, "")
	rest, code, ok := parseInterleaved(fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) == 0 {
		return usageError(fl, stderr, errors.New("say list, create or delete"))
	}
	projectPath := func() (string, error) {
		p := *project
		if p == "" {
			p = "."
		}
		return filepath.Abs(p)
	}
	switch sub := rest[0]; sub {
	case "list":
		if len(rest) != 1 {
			return usageError(fl, stderr, fmt.Errorf("unexpected argument %q", rest[1]))
		}
		var out projectList
		if _, code := callRemote(ctx, stderr, "", mcp.ToolProjectList, nil, &out); code != 0 {
			return code
		}
		var list []workspaceEntry
		for _, p := range out.Projects {
			if *project != "" {
				want, err := projectPath()
				if err != nil || !samePath(want, p.Path) {
					continue
				}
			}
			list = append(list, p.Workspaces...)
		}
		if *asJSON {
			if list == nil {
				list = []workspaceEntry{}
			}
			data, err := json.Marshal(list)
			if err != nil {
				fmt.Fprintf(stderr, "error: %v\n", err)
				return 1
			}
			return printJSON(stdout, stderr, data)
		}
		if len(list) == 0 {
			fmt.Fprintln(stdout, "no workspaces; create one with `codehydra workspace create NAME --project PATH`")
		}
		for _, w := range list {
			fmt.Fprintf(stdout, "%s\t%s\n", w.Name, w.Path)
		}
		return 0
	case "create":
		if len(rest) != 2 {
			return usageError(fl, stderr, errors.New("workspace create takes one NAME"))
		}
		pp, err := projectPath()
		if err != nil {
			return usageError(fl, stderr, err)
		}
		args := map[string]any{"projectPath": pp, "name": rest[1]}
		if *base != "" {
			args["base"] = *base
		}
		var w workspaceEntry
		raw, code := callRemote(ctx, stderr, "", mcp.ToolCreate, args, &w)
		if code != 0 {
			return code
		}
		if *asJSON {
			return printJSON(stdout, stderr, raw)
		}
		fmt.Fprintf(stdout, "created workspace %s at %s\n", w.Name, w.Path)
		return 0
	case "delete":
		if len(rest) != 2 {
			return usageError(fl, stderr, errors.New("workspace delete takes one PATH"))
		}
		path, err := filepath.Abs(rest[1])
		if err != nil {
			return usageError(fl, stderr, err)
		}
		if _, code := callRemote(ctx, stderr, path, mcp.ToolDelete, map[string]any{"keepBranch": *keepBranch}, nil); code != 0 {
			return code
		}
		fmt.Fprintf(stdout, "deleting workspace %s (it continues in the background)\n", path)
		return 0
	default:
		return usageError(fl, stderr, fmt.Errorf("unknown workspace command %q", sub))
	}
}

type workspaceEntry struct {
	Name        string `json:"name"`
	Branch      string `json:"branch,omitempty"`
	Path        string `json:"path"`
	ProjectPath string `json:"projectPath"`
	Head        string `json:"head,omitempty"`
	Detached    bool   `json:"detached,omitempty"`
}

type projectList struct {
	Projects []struct {
		Name       string           `json:"name"`
		Path       string           `json:"path"`
		Workspaces []workspaceEntry `json:"workspaces"`
	} `json:"projects"`
}

// callRemote calls one tool of the running instance, with wsPath as
// X-Workspace-Path when set, and decodes the result into out (if not nil).
// It prints what went wrong itself and returns a non-zero exit code then.
func callRemote(ctx context.Context, stderr io.Writer, wsPath, tool string, args any, out any) (json.RawMessage, int) {
	info, running, err := runningInstance()
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return nil, 1
	}
	if !running {
		fmt.Fprintln(stderr, notRunning)
		return nil, 1
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	r, err := mcp.Dial(ctx, mcp.DialOptions{URL: info.MCPURL, Token: info.Token, WorkspacePath: wsPath, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "error: cannot reach CodeHydra's MCP server: %v\n(if CodeHydra was just restarted or its token rotated, try again; `codehydra status` shows the instance)\n", err)
		return nil, 1
	}
	defer r.Close()
	raw, err := r.Call(ctx, tool, args)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return nil, 1
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			fmt.Fprintf(stderr, "error: unexpected answer from %s: %v\n", tool, err)
			return nil, 1
		}
	}
	return raw, 0
}

// runningInstance reads the instance file; running is false when there is
// none or its process is gone. A running instance without an MCP server is
// an error.
func runningInstance() (info instance.Info, running bool, err error) {
	info, err = instance.Read(paths.InstanceFile())
	if errors.Is(err, instance.ErrNotRunning) {
		return info, false, nil
	}
	if err != nil {
		return info, false, fmt.Errorf("%w (remove the file if CodeHydra is not running)", err)
	}
	if !instance.Alive(info.PID) {
		return info, false, nil
	}
	if info.MCPURL == "" || info.Token == "" {
		return info, false, fmt.Errorf("CodeHydra runs (pid %d) without an MCP server; see its log (%s) and restart it", info.PID, paths.LogFile())
	}
	return info, true, nil
}

// readSettings reads the settings file without the side effects of
// settings.Load (which moves a broken file aside): a read-only command must
// not change anything.
func readSettings(stderr io.Writer) settings.Settings {
	s := settings.Default()
	data, err := os.ReadFile(paths.SettingsFile())
	if errors.Is(err, fs.ErrNotExist) {
		return s
	}
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		fmt.Fprintf(stderr, "warning: cannot read %s (%v); assuming the default settings\n", paths.SettingsFile(), err)
		return settings.Default()
	}
	return s
}

// readToken reads the kept token without creating one.
func readToken() (string, error) {
	data, err := os.ReadFile(paths.TokenFile())
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", errors.New("empty token file")
	}
	return v, nil
}

func samePath(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

func printJSON(stdout, stderr io.Writer, raw []byte) int {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return 1
	}
	return 0
}

func remoteFlagSet(name, help string) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() { fmt.Fprint(fl.Output(), help) }
	return fl
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments (`workspace create NAME --project P`), which the
// flag package alone stops at. --help prints the help (code 0); a bad flag
// prints an error and the help (code 2).
func parseInterleaved(fl *flag.FlagSet, args []string, stdout, stderr io.Writer) (positional []string, code int, ok bool) {
	for {
		err := fl.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fl.SetOutput(stdout)
			fl.Usage()
			return nil, 0, false
		}
		if err != nil {
			return nil, usageError(fl, stderr, err), false
		}
		if fl.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fl.Arg(0))
		args = fl.Args()[1:]
	}
}

// usageError prints err and the help on stderr and returns exit code 2, as
// the other commands do for bad usage.
func usageError(fl *flag.FlagSet, stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "codehydra %s: %v\n\n", fl.Name(), err)
	fl.SetOutput(stderr)
	fl.Usage()
	return 2
}
