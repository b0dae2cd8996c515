package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/mcpstdio"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// remoteInstance is a real MCP server in this process, in front of a real
// workspace manager on a temp repository, announced by an instance file
// that names this process — what the remote commands find when CodeHydra
// runs.
type remoteInstance struct {
	mgr     *workspace.Manager
	srv     *mcp.Server
	project string
	token   string
}

func startRemoteInstance(t *testing.T) *remoteInstance {
	t.Helper()
	return startRemoteInstanceWith(t, mcp.Options{})
}

// startRemoteInstanceWith is startRemoteInstance with the server's
// options o (its token and workspaces are filled in).
func startRemoteInstanceWith(t *testing.T, o mcp.Options) *remoteInstance {
	t.Helper()
	isolate(t)
	project := testenv.GitRepo(t, "project")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	token, err := mcp.LoadOrCreateToken(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	o.Token, o.Workspaces = token, mgr
	srv, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		<-served
	})
	info := instance.Info{PID: os.Getpid(), MCPURL: srv.URL(), MCPPort: srv.Port(), Token: token.Value(), StartedAt: time.Now().UTC()}
	if err := instance.Write(paths.InstanceFile(), info); err != nil {
		t.Fatal(err)
	}
	holdLock(t)
	return &remoteInstance{mgr: mgr, srv: srv, project: project, token: token.Value()}
}

// runRemote runs one remote command in-process, as the command line does.
func runRemote(t *testing.T, cmd string, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{cmd}, args...)...)
}

func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRemoteCommandsSayWhenCodeHydraIsNotRunning(t *testing.T) {
	isolate(t)
	check := func(t *testing.T) {
		t.Helper()
		for _, args := range [][]string{{"project", "list"}, {"project", "add", "/x"}, {"workspace", "list"}, {"workspace", "delete", "/x"}} {
			code, out, errOut := runRemote(t, args[0], args[1:]...)
			if code != 1 || out != "" || !strings.Contains(errOut, "CodeHydra is not running; start it with `codehydra` or `codehydra serve`") {
				t.Errorf("%v: code %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
	}
	t.Run("no instance file", check)
	t.Run("instance file of a dead process", func(t *testing.T) {
		if err := instance.Write(paths.InstanceFile(), instance.Info{PID: deadPID(t), MCPURL: "http://127.0.0.1:1/mcp", MCPPort: 1, Token: "x"}); err != nil {
			t.Fatal(err)
		}
		check(t)
	})
}

func TestProjectCommandsActOnTheRunningInstance(t *testing.T) {
	ri := startRemoteInstance(t)
	second := testenv.GitRepo(t, "second")

	code, out, errOut := runRemote(t, "project", "add", second)
	if code != 0 || !strings.Contains(out, "added project") || !strings.Contains(out, second) {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	if len(ri.mgr.Projects()) != 2 {
		t.Fatalf("manager has %v", ri.mgr.Projects())
	}

	code, out, errOut = runRemote(t, "project", "list")
	if code != 0 || !strings.Contains(out, ri.project) || !strings.Contains(out, second) {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	code, out, _ = runRemote(t, "project", "list", "--json")
	var listed struct {
		Projects []struct{ Path string } `json:"projects"`
	}
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed.Projects) != 2 {
		t.Fatalf("list --json: %d %q %v", code, out, err)
	}

	code, out, errOut = runRemote(t, "project", "remove", second)
	if code != 0 || !strings.Contains(out, "removed project") {
		t.Fatalf("remove: %d %q %q", code, out, errOut)
	}
	if len(ri.mgr.Projects()) != 1 {
		t.Fatalf("manager still has %v", ri.mgr.Projects())
	}
	code, out, errOut = runRemote(t, "project", "remove", second)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "error: ") || !strings.HasSuffix(strings.TrimSpace(errOut), "(project-not-found)") {
		t.Fatalf("second remove: %d %q %q", code, out, errOut)
	}
}

func TestWorkspaceCommandsActOnTheRunningInstance(t *testing.T) {
	ri := startRemoteInstance(t)

	// Flags after the name, as people type them.
	code, out, errOut := runRemote(t, "workspace", "create", "feature/cli", "--project", ri.project, "--base", "main")
	if code != 0 || !strings.Contains(out, "created workspace feature/cli at ") {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	ws := strings.TrimSpace(strings.SplitN(out, " at ", 2)[1])
	if _, err := ri.mgr.Resolve(ws); err != nil {
		t.Fatalf("created workspace does not resolve: %v", err)
	}

	code, out, _ = runRemote(t, "workspace", "list")
	if code != 0 || !strings.Contains(out, "feature/cli\t"+ws) {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ = runRemote(t, "workspace", "list", "--project", t.TempDir(), "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("list of another project: %d %q", code, out)
	}
	// An empty list is an empty stdout, so that WS=$(… | head -n1 | cut -f2)
	// is empty too; the hint goes to stderr.
	code, out, errOut = runRemote(t, "workspace", "list", "--project", t.TempDir())
	if code != 0 || out != "" || !strings.Contains(errOut, "no workspaces") {
		t.Fatalf("empty list: %d %q %q", code, out, errOut)
	}

	tests := []struct {
		name string
		args []string
		code string
	}{
		{"bad name", []string{"create", "bad..name", "--project", ri.project}, "(invalid-input)"},
		{"existing name", []string{"create", "feature/cli", "--project", ri.project}, "(conflict)"},
		{"unknown project", []string{"create", "x", "--project", t.TempDir()}, "(project-not-found)"},
		{"delete a non-workspace", []string{"delete", ri.project}, "(workspace-not-found)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runRemote(t, "workspace", tc.args...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, "error: ") || !strings.HasSuffix(strings.TrimSpace(errOut), tc.code) {
				t.Fatalf("%d %q %q, want error ending %s", code, out, errOut, tc.code)
			}
		})
	}

	// The user's delete waits for it.
	code, out, errOut = runRemote(t, "workspace", "delete", ws)
	if code != 0 || !strings.Contains(out, "deleted workspace "+ws) {
		t.Fatalf("delete: %d %q %q", code, out, errOut)
	}
	if _, err := ri.mgr.Resolve(ws); workspace.CodeOf(err) != workspace.CodeWorkspaceNotFound {
		t.Fatalf("the workspace resolves after the delete said it was done: %v", err)
	}
}

func TestRemoteCommandsRejectBadUsage(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"project"}, {"project", "frobnicate"}, {"project", "add"}, {"project", "add", "a", "b"}, {"project", "list", "--bogus"},
		{"workspace"}, {"workspace", "create"}, {"workspace", "delete"},
		{"mcp-config"}, {"mcp-config", "--client", "vscode"}, {"mcp-config", "--client", "opencode", "stray"},
	} {
		code, out, errOut := runRemote(t, args[0], args[1:]...)
		if code != 2 || out != "" || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	for _, cmd := range []string{"project", "workspace", "mcp-config"} {
		code, out, _ := runRemote(t, cmd, "--help")
		if code != 0 || !strings.HasPrefix(out, "Usage:") {
			t.Errorf("%s --help: %d %q", cmd, code, out)
		}
	}
}

func TestMCPConfigPrintsAConfigThatWorks(t *testing.T) {
	ri := startRemoteInstance(t)
	ws, err := ri.mgr.Create(t.Context(), workspace.CreateOptions{ProjectPath: ri.project, Name: "ext"})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := mcpstdio.ExecutablePath()
	if err != nil {
		t.Fatal(err)
	}
	for _, client := range mcp.Clients() {
		t.Run(client, func(t *testing.T) {
			code, out, errOut := runRemote(t, "mcp-config", "--client", client, "--workspace", ws.Path)
			if code != 0 {
				t.Fatalf("%d %q", code, errOut)
			}
			if !strings.Contains(out, exe) || !strings.Contains(out, `"mcp-stdio"`) || !strings.Contains(out, ws.Path) {
				t.Fatalf("config lacks the command, mcp-stdio or the workspace:\n%s", out)
			}
			if strings.Contains(out, ri.srv.URL()) || strings.Contains(out, ri.token) || strings.Contains(out, wsToken(t, ri.token, ws.Path)) {
				t.Fatalf("the config holds a URL or a token:\n%s", out)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON: %s", out)
			}
			if strings.Contains(errOut, "warning") {
				t.Fatalf("a warning for a config that keeps working: %q", errOut)
			}
		})
	}

	t.Run("--http with a dynamic port: refused, saying why", func(t *testing.T) {
		code, out, errOut := runRemote(t, "mcp-config", "--client", "claude-code", "--workspace", ws.Path, "--http")
		if code != 1 || out != "" || !strings.Contains(errOut, "--http needs a fixed MCP port") {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
	})
	t.Run("--http for claude-desktop: bad usage", func(t *testing.T) {
		code, out, errOut := runRemote(t, "mcp-config", "--client", "claude-desktop", "--http")
		if code != 2 || out != "" || !strings.Contains(errOut, "no HTTP form") {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
	})
	testenv.WriteSettings(t, `{"mcpPort":`+strconv.Itoa(ri.srv.Port())+`}`)
	for _, client := range []string{mcp.ClientOpencode, mcp.ClientClaudeCode} {
		t.Run(client+" --http", func(t *testing.T) {
			code, out, errOut := runRemote(t, "mcp-config", "--client", client, "--workspace", ws.Path, "--http")
			if code != 0 {
				t.Fatalf("%d %q", code, errOut)
			}
			if !strings.Contains(out, ri.srv.URL()) || !strings.Contains(out, wsToken(t, ri.token, ws.Path)) || !strings.Contains(out, ws.Path) {
				t.Fatalf("config lacks the URL, the workspace's token or the workspace:\n%s", out)
			}
			if strings.Contains(out, ri.token) {
				t.Fatalf("the config of a workspace holds the master token:\n%s", out)
			}
		})
	}

	t.Run("the claude-code config reaches the workspace", func(t *testing.T) {
		_, out, _ := runRemote(t, "mcp-config", "--client", "claude-code", "--workspace", ws.Path, "--http")
		var cfg struct {
			MCPServers map[string]struct {
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatal(err)
		}
		s := cfg.MCPServers["codehydra"]
		r, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: s.URL, Token: strings.TrimPrefix(s.Headers["Authorization"], "Bearer "), WorkspacePath: s.Headers["X-Workspace-Path"]})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		raw, err := r.Call(t.Context(), mcp.ToolGetStatus, nil)
		if err != nil || !strings.Contains(string(raw), `"path":"`+ws.Path+`"`) {
			t.Fatalf("status %s %v", raw, err)
		}
	})

	t.Run("fixed port: no warning", func(t *testing.T) {
		testenv.WriteSettings(t, `{"mcpPort":`+strconv.Itoa(ri.srv.Port())+`}`)
		code, _, errOut := runRemote(t, "mcp-config", "--client", "opencode", "--workspace", ws.Path, "--http")
		if code != 0 || strings.Contains(errOut, "warning") {
			t.Fatalf("%d %q", code, errOut)
		}
	})
	t.Run("fixed port taken at launch: warning", func(t *testing.T) {
		testenv.WriteSettings(t, `{"mcpPort":1}`)
		code, _, errOut := runRemote(t, "mcp-config", "--client", "opencode", "--http")
		if code != 0 || !strings.Contains(errOut, "was taken") || !strings.Contains(errOut, "no --workspace") {
			t.Fatalf("%d %q", code, errOut)
		}
	})
	// A workspace token needs the worktree's git registration, which the
	// main checkout (the project) does not have as a workspace.
	t.Run("the project's main checkout: refused, saying why", func(t *testing.T) {
		// No warning about "this config" first: no config is printed.
		for _, args := range [][]string{{"--client", "claude-code"}, {"--client", "claude-code", "--http"}} {
			code, out, errOut := runRemote(t, "mcp-config", append(args, "--workspace", ri.project)...)
			if code != 1 || out != "" || !strings.Contains(errOut, "cannot be a workspace") || !strings.Contains(errOut, "main checkout") ||
				strings.Contains(errOut, "this config works") {
				t.Fatalf("%v: %d %q %q", args, code, out, errOut)
			}
		}
	})
	t.Run("not running, fixed port: config for the next launch", func(t *testing.T) {
		testenv.WriteSettings(t, `{"mcpPort":4777}`)
		if err := instance.Remove(paths.InstanceFile()); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runRemote(t, "mcp-config", "--client", "claude-code", "--http")
		if code != 0 || !strings.Contains(out, "http://127.0.0.1:4777/mcp") || !strings.Contains(out, ri.token) || !strings.Contains(errOut, "not running") {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
		code, out, errOut = runRemote(t, "mcp-config", "--client", "claude-code", "--workspace", ws.Path, "--http")
		if code != 0 || !strings.Contains(out, wsToken(t, ri.token, ws.Path)) || strings.Contains(out, ri.token) {
			t.Fatalf("--workspace, not running: %d %q %q", code, out, errOut)
		}
	})
	t.Run("not running, fixed port, a spoilt token file: refused, saying why", func(t *testing.T) {
		testenv.WriteSettings(t, `{"mcpPort":4777}`)
		good, err := os.ReadFile(paths.TokenFile())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.WriteFile(paths.TokenFile(), good, 0o600) })
		const spoilt = "not-a-token-SECRETISH"
		if err := os.WriteFile(paths.TokenFile(), []byte(spoilt), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runRemote(t, "mcp-config", "--client", "claude-code", "--http")
		if code != 1 || out != "" || !strings.Contains(errOut, "holds no valid token") || !strings.Contains(errOut, "start CodeHydra once") ||
			strings.Contains(errOut, spoilt) {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
	})
	t.Run("not running, dynamic port: the command form still works", func(t *testing.T) {
		testenv.WriteSettings(t, `{"mcpPort":0}`)
		code, out, errOut := runRemote(t, "mcp-config", "--client", "claude-code")
		if code != 0 || !strings.Contains(out, exe) || !strings.Contains(errOut, "CodeHydra is not running; this config works whenever it runs") {
			t.Fatalf("%d %q %q", code, out, errOut)
		}
		code, out, errOut = runRemote(t, "mcp-config", "--client", "claude-code", "--http")
		if code != 1 || out != "" || !strings.Contains(errOut, "--http needs a fixed MCP port") {
			t.Fatalf("--http: %d %q %q", code, out, errOut)
		}
	})
}

// wsToken is the token of the workspace at path under master.
func wsToken(t *testing.T, master, path string) string {
	t.Helper()
	tok, err := mcp.WorkspaceToken(master, path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
