//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// TestServeKeepsAWorkspaceWhoseSetupFailedAndSaysWhyOverMCP runs the built
// binary (headless, the fake opencode as agents) on a project whose setup
// command fails. workspace_create answers, the workspace stays with the
// user's untracked file copied into it, its agent is not started, and
// workspace_get_status says why, with the setup's exit code. The user's
// answer (Retry setup, Start agent anyway) is only in the tray: the app
// package's TestTraysStartAgentAnywayStartsTheAgentOfAFailedSetup and the
// GUI test TestGUITrayStartsTheAgentOfAFailedSetupAnyway drive it.
func TestServeKeepsAWorkspaceWhoseSetupFailedAndSaysWhyOverMCP(t *testing.T) {
	bin, fake := buildApp(t)
	t.Cleanup(func() {
		for _, pid := range processesOf(t, fake) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	if err := os.WriteFile(filepath.Join(repo, ".env"), []byte("TOKEN=local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSetupSettings(t, fake, repo, `sh -c "echo resolving packages; exit 7"`)
	app := launch(t, bin, os.Environ())
	// The instance file is written before the projects are loaded.
	app.poll(t, "the project", func() bool {
		raw, err := app.call(t, "", mcp.ToolProjectList, nil)
		return err == nil && strings.Contains(string(raw), repo)
	})

	raw, err := app.call(t, "", mcp.ToolCreate, map[string]any{"projectPath": repo, "name": "feat"})
	if err != nil {
		t.Fatalf("workspace_create: %v\n%s", err, app.out)
	}
	var made workspace.Workspace
	if err := json.Unmarshal(raw, &made); err != nil || made.Path == "" {
		t.Fatalf("workspace_create answered %s: %v", raw, err)
	}

	var st workspace.Status
	app.poll(t, "the failed setup in workspace_get_status", func() bool {
		raw, err := app.call(t, made.Path, mcp.ToolGetStatus, nil)
		if err != nil {
			t.Fatalf("workspace_get_status: %v", err)
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("workspace_get_status answered %s: %v", raw, err)
		}
		return st.Agent.State == workspace.AgentStateFailed
	})
	for _, want := range []string{"setup failed", "exit code 7", "Retry setup", "Start agent anyway"} {
		if !strings.Contains(st.Agent.Detail, want) {
			t.Errorf("agent.detail %q does not say %q", st.Agent.Detail, want)
		}
	}
	if !strings.Contains(app.out.String(), "resolving packages") {
		t.Errorf("the setup's output is not in the log:\n%s", app.out)
	}
	if b, err := os.ReadFile(filepath.Join(made.Path, ".env")); err != nil || string(b) != "TOKEN=local\n" {
		t.Errorf("the new worktree's .env: %q, %v; want the main checkout's copied", b, err)
	}
	if !strings.Contains(testenv.Git(t, repo, "worktree", "list"), made.Path) {
		t.Error("the workspace whose setup failed was removed")
	}

	// A while after the failure, still no agent: nothing starts it but the
	// user.
	time.Sleep(time.Second)
	if port, err := app.call(t, made.Path, mcp.ToolGetOpencodePort, nil); err != nil || string(port) != "null" {
		t.Errorf("workspace_get_opencode_port: %s, %v; want null, no agent", port, err)
	}
	if pids := processesOf(t, fake); len(pids) != 0 {
		t.Errorf("agent processes %v run although the only workspace's setup failed", pids)
	}
	app.stop(t)
}
