//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// stdioClient starts `codehydra mcp-stdio args...` as an MCP client
// would: the SDK's client over the command's stdin and stdout.
func stdioClient(t *testing.T, bin string, env []string, args ...string) (*sdk.ClientSession, *testenv.SyncBuffer, error) {
	t.Helper()
	return stdioClientWith(t, bin, env, nil, args...)
}

// stdioClientWith is stdioClient with the client's session options (nil:
// the newest protocol).
func stdioClientWith(t *testing.T, bin string, env []string, opts *sdk.ClientSessionOptions, args ...string) (*sdk.ClientSession, *testenv.SyncBuffer, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp-stdio"}, args...)...)
	cmd.Env = env
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, opts)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, stderr, err
}

// serveOneWorkspace runs the built binary's serve, with the fake opencode
// as the agents, on a project repo with one workspace, one.
func serveOneWorkspace(t *testing.T) (bin string, env []string, app *appRun, repo, one string) {
	return serveOneWorkspaceWith(t, nil)
}

// serveOneWorkspaceWith is serveOneWorkspace with more settings, and more
// variables in the environment (none of the test's own OTEL_ ones).
func serveOneWorkspaceWith(t *testing.T, more map[string]any, moreEnv ...string) (bin string, env []string, app *appRun, repo, one string) {
	t.Helper()
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	isolate(t)
	repo = testenv.GitRepo(t, "repo")
	one = filepath.Join(filepath.Dir(repo), "worktrees", "one")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "one", one)
	set := map[string]any{"opencodeBin": fake, "projects": []string{repo}}
	maps.Copy(set, more)
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(b))
	env = otelEnv(moreEnv...)
	return bin, env, launch(t, bin, env), repo, one
}

// toolJSON calls tool and returns its JSON text, or the error result's.
func toolJSON(t *testing.T, cs *sdk.ClientSession, tool string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return mcp.ResultText(res), res.IsError
}

// TestMCPStdioReachesTheRunningServeAndSurvivesItsRestart runs the built
// binary: `serve` with the fake opencode as the agents, and `mcp-stdio`
// as a client would start it. The client reaches its workspace (or, with
// no --workspace, acts as the user), keeps working across a restart of
// serve on a new port, and gets the reason at once when nothing runs.
func TestMCPStdioReachesTheRunningServeAndSurvivesItsRestart(t *testing.T) {
	bin, env, app, repo, one := serveOneWorkspace(t)

	ws, wsErr, err := stdioClient(t, bin, env, "--workspace", one)
	if err != nil {
		t.Fatalf("connect to mcp-stdio --workspace: %v\n%s", err, wsErr)
	}
	if got, isErr := toolJSON(t, ws, mcp.ToolGetStatus); isErr || !strings.Contains(got, `"path":"`+one+`"`) {
		t.Fatalf("%s through mcp-stdio --workspace = %s", mcp.ToolGetStatus, got)
	}
	if got, isErr := toolJSON(t, ws, mcp.ToolProjectAdd); !isErr || !strings.Contains(got, "forbidden") {
		t.Fatalf("project_add with the workspace's token = %s, want forbidden", got)
	}
	user, userErr, err := stdioClient(t, bin, env)
	if err != nil {
		t.Fatalf("connect to mcp-stdio: %v\n%s", err, userErr)
	}
	if got, isErr := toolJSON(t, user, mcp.ToolProjectList); isErr || !strings.Contains(got, repo) {
		t.Fatalf("project_list through mcp-stdio = %s", got)
	}
	if got, isErr := toolJSON(t, user, mcp.ToolGetStatus); !isErr || !strings.Contains(got, "invalid-input") {
		t.Fatalf("%s without a workspace = %s, want invalid-input", mcp.ToolGetStatus, got)
	}

	// serve restarts (a dynamic port: most likely another one); the
	// clients that were started before go on working.
	app.stop(t)
	app = launch(t, bin, env)
	if got, isErr := toolJSON(t, ws, mcp.ToolGetStatus); isErr || !strings.Contains(got, `"path":"`+one+`"`) {
		t.Fatalf("%s after serve restarted = %s\nstderr: %s", mcp.ToolGetStatus, got, wsErr)
	}
	app.stop(t)

	// Nothing runs: the client gets the reason and nothing hangs.
	start := time.Now()
	_, stderr, err := stdioClient(t, bin, env)
	if err == nil || !strings.Contains(err.Error(), "CodeHydra is not running") {
		t.Fatalf("connect with nothing running: %v, want the reason", err)
	}
	if !strings.Contains(stderr.String(), "CodeHydra is not running") || time.Since(start) > 10*time.Second {
		t.Fatalf("stderr %q after %v", stderr, time.Since(start))
	}
}

// stdioCommandOf reads the command a printed config runs, the way its
// client does.
func stdioCommandOf(t *testing.T, client string, config []byte) []string {
	t.Helper()
	if client == mcp.ClientOpencode {
		var c struct {
			MCP map[string]struct {
				Type    string   `json:"type"`
				Command []string `json:"command"`
				Enabled bool     `json:"enabled"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal(config, &c); err != nil {
			t.Fatal(err)
		}
		s := c.MCP[mcp.ServerName]
		if s.Type != "local" || !s.Enabled || len(s.Command) == 0 {
			t.Fatalf("opencode config %s", config)
		}
		return s.Command
	}
	var c struct {
		MCPServers map[string]struct {
			Type    string   `json:"type"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		t.Fatal(err)
	}
	s := c.MCPServers[mcp.ServerName]
	if s.Command == "" || (client == mcp.ClientClaudeCode) != (s.Type == "stdio") {
		t.Fatalf("%s config %s", client, config)
	}
	return append([]string{s.Command}, s.Args...)
}

// TestMCPConfigPrintsConfigsThatRunMCPStdio runs what the built binary's
// mcp-config prints for each client, as the client would, against a
// running serve: the command is this binary's absolute path, the config
// holds neither port nor token, and its workspace_get_status answers for
// the workspace.
func TestMCPConfigPrintsConfigsThatRunMCPStdio(t *testing.T) {
	bin, env, app, _, one := serveOneWorkspace(t)
	// The binary reached through a symlink, as an installed one may be.
	link := filepath.Join(t.TempDir(), "codehydra-link")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	for _, client := range mcp.Clients() {
		t.Run(client, func(t *testing.T) {
			cmd := exec.Command(link, "mcp-config", "--client", client, "--workspace", one)
			cmd.Env = env
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("mcp-config: %v", err)
			}
			if strings.Contains(string(out), app.info.Token) || strings.Contains(string(out), strconv.Itoa(app.info.MCPPort)) || strings.Contains(string(out), "npx") {
				t.Fatalf("the config holds the token, the port or npx:\n%s", out)
			}
			argv := stdioCommandOf(t, client, out)
			if argv[0] != bin {
				t.Fatalf("the config runs %s, want the binary's real path %s", argv[0], bin)
			}
			run := exec.Command(argv[0], argv[1:]...)
			run.Env = env
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: client, Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: run}, nil)
			if err != nil {
				t.Fatalf("run the printed config: %v", err)
			}
			defer cs.Close()
			if got, isErr := toolJSON(t, cs, mcp.ToolGetStatus); isErr || !strings.Contains(got, `"path":"`+one+`"`) {
				t.Fatalf("%s through the printed config = %s", mcp.ToolGetStatus, got)
			}
		})
	}
	app.stop(t)
}
