//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// TestAWorkspaceMadeAgainAtItsPathGetsANewTokenAndTheOldOneIsRefused runs
// the built binary with the fake opencode as the agents. A worktree made
// outside the app gets a nonce and a token that works; once it is deleted
// and a new worktree is made at the same path, the old token is refused,
// its open session is closed, and the new agent's token (and the one
// mcp-config prints) works.
func TestAWorkspaceMadeAgainAtItsPathGetsANewTokenAndTheOldOneIsRefused(t *testing.T) {
	bin, env, repo, wts, app := launchWithWorktrees(t, "one")
	one := wts[0]
	app.agentsReady(t, []string{one})

	nonce := filepath.Join(repo, ".git", "worktrees", "one", workspace.TokenNonceFile)
	if _, err := os.Stat(nonce); err != nil {
		t.Fatalf("the worktree made outside the app has no token nonce: %v", err)
	}
	old := environOf(t, agentRecord(t, one).PID)["CODEHYDRA_MCP_TOKEN"]
	if _, _, got := mcpConfigFor(t, bin, env, one); got != old {
		t.Fatalf("mcp-config printed %q, the agent has %q", got, old)
	}
	app.poll(t, "the agent to connect with its token", func() bool { return agentMCPStatus(t, agentRecord(t, one)) == "connected" })
	open, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: app.info.MCPURL, Token: old, WorkspacePath: one, Protocol: mcp.ProtocolSessions})
	if err != nil {
		t.Fatalf("dial with the workspace's token: %v", err)
	}
	defer open.Close()
	if _, err := open.Call(t.Context(), mcp.ToolGetStatus, nil); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command(bin, "workspace", "delete", one).CombinedOutput(); err != nil {
		t.Fatalf("workspace delete: %v\n%s", err, out)
	}
	app.poll(t, "the workspace to be gone", func() bool { _, err := os.Stat(one); return os.IsNotExist(err) })
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "again", one)
	app.poll(t, "the new workspace's agent", func() bool {
		rec := agentRecord(t, one)
		return rec.PID != 0 && agentMCPStatus(t, rec) == "connected"
	})

	fresh := environOf(t, agentRecord(t, one).PID)["CODEHYDRA_MCP_TOKEN"]
	if fresh == "" || fresh == old {
		t.Fatalf("the new workspace's agent has the token %q (the old one: %v)", fresh, fresh == old)
	}
	if _, _, got := mcpConfigFor(t, bin, env, one); got != fresh {
		t.Fatalf("mcp-config printed %q, the new agent has %q", got, fresh)
	}
	if _, err := open.Call(t.Context(), mcp.ToolGetStatus, nil); err == nil {
		t.Fatal("the deleted workspace's open session still answers")
	}
	if _, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: app.info.MCPURL, Token: old, WorkspacePath: one}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("dial with the deleted workspace's token: %v, want Unauthorized", err)
	}
	r, err := mcp.Dial(t.Context(), mcp.DialOptions{URL: app.info.MCPURL, Token: fresh, WorkspacePath: one})
	if err != nil {
		t.Fatalf("dial with the new workspace's token: %v", err)
	}
	defer r.Close()
	if raw, err := r.Call(t.Context(), mcp.ToolGetStatus, nil); err != nil || !strings.Contains(string(raw), `"branch":"again"`) {
		t.Fatalf("the new workspace's status: %s %v", raw, err)
	}
	app.stop(t)
}

// launchWithWorktrees makes a repository with one worktree per name,
// made outside the app, and runs the built binary on it with the fake
// opencode as the agents.
func launchWithWorktrees(t *testing.T, names ...string) (bin string, env []string, repo string, wts []string, app *appRun) {
	t.Helper()
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	isolate(t)
	repo = testenv.GitRepo(t, "repo")
	for _, n := range names {
		wt := filepath.Join(filepath.Dir(repo), "worktrees", n)
		testenv.Git(t, repo, "worktree", "add", "-q", "-b", n, wt)
		wts = append(wts, wt)
	}
	// A fixed port: the HTTP form of mcp-config, which holds the token,
	// needs one.
	set, err := json.Marshal(map[string]any{"opencodeBin": fake, "projects": []string{repo}, "mcpPort": testenv.FreePort(t)})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSettings(t, string(set))
	env = os.Environ()
	return bin, env, repo, wts, launch(t, bin, env)
}

// mcpConfigFor is what `mcp-config --client opencode --workspace ws
// --http` prints, and its codehydra entry's token.
func mcpConfigFor(t *testing.T, bin string, env []string, ws string) (out []byte, entry opencodeMCPEntry, token string) {
	t.Helper()
	cmd := exec.Command(bin, "mcp-config", "--client", "opencode", "--workspace", ws, "--http")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-config: %v\n%s", err, out)
	}
	entry = codehydraEntry(t, out)
	token, _ = strings.CutPrefix(entry.Headers["Authorization"], "Bearer ")
	return out, entry, token
}
