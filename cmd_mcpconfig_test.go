//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// TestAgentsAndWorkspaceConfigsCarryTheWorkspacesTokenNotTheMaster runs
// the built binary with the fake opencode as the agents: the token in an
// agent's environment, and the one `mcp-config --workspace W` prints, are
// W's own token — not the master token — and it works for W and for
// nothing that is not W's.
func TestAgentsAndWorkspaceConfigsCarryTheWorkspacesTokenNotTheMaster(t *testing.T) {
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	wsDir := filepath.Join(filepath.Dir(repo), "worktrees")
	one, two := filepath.Join(wsDir, "one"), filepath.Join(wsDir, "two")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "one", one)
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "two", two)
	// A fixed port: the HTTP form, which holds the token, needs one.
	set, err := json.Marshal(map[string]any{"opencodeBin": fake, "projects": []string{repo}, "mcpPort": testenv.FreePort(t)})
	if err != nil {
		t.Fatal(err)
	}
	writeSettings(t, string(set))
	env := os.Environ()
	app := launch(t, bin, env)
	app.agentsReady(t, []string{one, two})
	master, err := mcp.ReadToken(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}

	// The config mcp-config prints for one.
	cmd := exec.Command(bin, "mcp-config", "--client", "opencode", "--workspace", one, "--http")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-config: %v\n%s", err, out)
	}
	entry := codehydraEntry(t, out)
	token, _ := strings.CutPrefix(entry.Headers["Authorization"], "Bearer ")
	if strings.Contains(string(out), master) || token == "" {
		t.Fatalf("the config of a workspace holds the master token, or no token:\n%s", out)
	}
	if entry.Headers["X-Workspace-Path"] != one {
		t.Fatalf("the config names the workspace %q, want %s", entry.Headers["X-Workspace-Path"], one)
	}

	// The agent of one was given the same token, and the master token
	// reaches no agent.
	for _, ws := range []string{one, two} {
		agentEnv := environOf(t, agentRecord(t, ws).PID)
		got := agentEnv["CODEHYDRA_MCP_TOKEN"]
		if got == "" || got == master || strings.Contains(strings.Join(slices.Collect(maps.Values(agentEnv)), "\n"), master) {
			t.Fatalf("the agent of %s has CODEHYDRA_MCP_TOKEN %q and the master token in its environment: %v", ws, got, got == master)
		}
		if (ws == one) != (got == token) {
			t.Fatalf("the agent of %s has the token %q; mcp-config --workspace %s printed %q", ws, got, one, token)
		}
		app.poll(t, "the agent of "+ws+" to connect with its token", func() bool { return agentMCPStatus(t, agentRecord(t, ws)) == "connected" })
	}

	// The printed config works for one, and for nothing that is not one's.
	r, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: entry.URL, Token: token, WorkspacePath: one})
	if err != nil {
		t.Fatalf("dial with the printed config: %v", err)
	}
	defer r.Close()
	raw, err := r.Call(t.Context(), mcp.ToolGetStatus, nil)
	if err != nil || !strings.Contains(string(raw), `"path":"`+one+`"`) {
		t.Fatalf("%s with the printed config = %s, %v", mcp.ToolGetStatus, raw, err)
	}
	_, err = r.Call(t.Context(), mcp.ToolProjectRemove, map[string]any{"path": repo})
	if te := (*mcp.ToolError)(nil); !errors.As(err, &te) || te.Code != workspace.CodeForbidden {
		t.Fatalf("project_remove with the printed config: %v, want forbidden", err)
	}
	other, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: entry.URL, Token: token, WorkspacePath: two})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Call(t.Context(), mcp.ToolSetMetadata, map[string]any{"key": "stolen", "value": "yes"})
	if te := (*mcp.ToolError)(nil); !errors.As(err, &te) || te.Code != workspace.CodeForbidden {
		t.Fatalf("set metadata on two with one's token: %v, want forbidden", err)
	}
	if got := testenv.Git(t, repo, "config", "--list", "--local"); strings.Contains(got, "stolen") {
		t.Fatalf("two's metadata changed:\n%s", got)
	}
	if _, err := app.call(t, "", mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("the app no longer answers the master token: %v", err)
	}
	app.stop(t)
}
