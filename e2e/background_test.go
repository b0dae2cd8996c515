//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/tasks/taskstest"
	"codehydra/workspace"
)

// devMakefile's dev target is a dev server of two processes: make, which
// leads the run's group, and a child it leaves running, whose pid it
// writes (a crash's death signal reaches make only).
const devMakefile = "dev:\n\t@sleep 300 & echo $$! > child.pid; echo started; wait\n"

// TestBackgroundTasksEndWithTheirWorkspaceAndTheApp runs the real binary
// with a background task in each of three workspaces, and checks that
// deleting one, hibernating one, killing the app with SIGKILL (the next
// launch reaps) and quitting it each leave no process of the task behind.
func TestBackgroundTasksEndWithTheirWorkspaceAndTheApp(t *testing.T) {
	bin, fake := buildApp(t)
	base := isolate(t)
	repo := testenv.GitRepo(t, "repo")
	testenv.CommitFile(t, repo, "Makefile", devMakefile, "a dev server")
	testenv.CommitFile(t, repo, ".gitignore", "*.pid\n", "pid files")
	wsDir := filepath.Join(t.TempDir(), "worktrees")
	deleted, hibernated, crashed := filepath.Join(wsDir, "deleted"), filepath.Join(wsDir, "hibernated"), filepath.Join(wsDir, "crashed")
	for _, ws := range []string{deleted, hibernated, crashed} {
		testenv.Git(t, repo, "worktree", "add", "-q", "-b", filepath.Base(ws), ws)
	}
	set := map[string]any{"opencodeBin": fake, "projects": []string{repo}, "worktreeRoot": filepath.Join(base, "roots")}
	b, _ := json.Marshal(set)
	if err := os.MkdirAll(filepath.Dir(paths.SettingsFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.SettingsFile(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	app := launch(t, bin, os.Environ())
	app.agentsReady(t, []string{deleted, hibernated, crashed})

	// start runs the dev task of ws in the background and returns its
	// processes: make, and the child it left running.
	start := func(ws string) (lead, child int) {
		t.Helper()
		_ = os.Remove(filepath.Join(ws, "child.pid"))
		raw, err := callPatiently(t, app, ws, mcp.ToolRunTask, map[string]any{"name": "make:dev", "background": true})
		var run struct {
			State string
			Pid   int
		}
		if err != nil || json.Unmarshal(raw, &run) != nil || run.State != "running" || run.Pid == 0 {
			t.Fatalf("start the dev task in %s: %s, %v", ws, raw, err)
		}
		return run.Pid, taskstest.PID(t, filepath.Join(ws, "child.pid"))
	}
	gone := func(what string, pids ...int) {
		t.Helper()
		testenv.WaitFor(t, what, 10*time.Second, func() bool {
			for _, pid := range pids {
				if taskstest.Alive(pid) {
					return false
				}
			}
			return true
		})
	}

	lead, child := start(deleted)
	// A running dev server does not make its workspace look busy: only
	// the agent's sessions do (the fake opencode here has none).
	raw, err := callPatiently(t, app, deleted, mcp.ToolGetStatus, map[string]any{})
	var status struct {
		Agent struct {
			Type   string
			Counts struct{ Busy int }
		}
	}
	if err != nil || json.Unmarshal(raw, &status) != nil || (status.Agent.Type != "none" && status.Agent.Type != "idle") || status.Agent.Counts.Busy != 0 {
		t.Fatalf("with its dev server running, the workspace's status is %s (%v), want nothing busy", raw, err)
	}
	if _, err := callPatiently(t, app, deleted, mcp.ToolDelete, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	app.poll(t, "the deleted worktree gone", func() bool { return !testenv.Exists(deleted) })
	// Stopped first, waited for, and only then the worktree removed.
	if taskstest.Alive(lead) {
		t.Error("the dev server's leader outlived its worktree")
	}
	gone("the deleted workspace's dev server gone", lead, child)

	lead, child = start(hibernated)
	if _, err := callPatiently(t, app, "", mcp.ToolHibernate, map[string]any{"workspace": hibernated}); err != nil {
		t.Fatal(err)
	}
	if taskstest.Alive(lead) {
		t.Error("the dev server's leader runs after workspace_hibernate answered")
	}
	gone("the hibernated workspace's dev server gone", lead, child)

	lead, child = start(crashed)
	app.killHard(t)
	gone("the dev server's leader gone with the app (its death signal)", lead)
	if !taskstest.Alive(child) {
		t.Fatal("the dev server's child died with the app; what follows proves nothing")
	}
	app = launch(t, bin, os.Environ())
	gone("the crashed app's dev server reaped by the next launch", child)
	app.agentsReady(t, []string{crashed})

	lead, child = start(crashed)
	app.stop(t)
	gone("the dev server gone when the app quits", lead, child)
}

// callPatiently is app.call, again while the caller is rate-limited (the
// polls for the agents' readiness open a session each).
func callPatiently(t *testing.T, app *appRun, ws, tool string, args any) (json.RawMessage, error) {
	t.Helper()
	var raw json.RawMessage
	var err error
	testenv.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		raw, err = app.call(t, ws, tool, args)
		return err == nil || !strings.Contains(err.Error(), string(workspace.CodeRateLimited))
	})
	return raw, err
}
