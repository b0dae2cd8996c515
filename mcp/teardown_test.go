package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/prepare"
	"codehydra/workspace"
)

// newTeardownHarness is a harness whose manager runs the project's real
// teardown command, read at each delete from *teardown.
func newTeardownHarness(t *testing.T, teardown *string) *harness {
	t.Helper()
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir(),
		Teardowns: prepare.NewTeardowns(prepare.TeardownOptions{Setup: func(string) settings.ProjectSetup {
			return settings.ProjectSetup{Teardown: *teardown}
		}})})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return startHarness(t, mgr, project)
}

func TestTheUsersWorkspaceDeleteAnswersTheTeardownsFailure(t *testing.T) {
	teardown := `sh -c "echo compose down failed: network in use; exit 3"`
	h := newTeardownHarness(t, &teardown)
	ws := h.create("doomed")

	code, msg := errCode(t, call(t, h.session(ws.Path), ToolDelete, nil))
	if code != workspace.CodeConflict {
		t.Fatalf("delete with a failing teardown: %s %q, want conflict", code, msg)
	}
	for _, want := range []string{"teardown", "exit code 3", "compose down failed: network in use", "not deleted", "force: true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the answer %q does not say %q", msg, want)
		}
	}
	if _, err := os.Stat(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatalf("the worktree was touched: %v", err)
	}
	if _, err := h.mgr.Resolve(ws.Path); err != nil {
		t.Fatalf("the workspace went: %v", err)
	}

	var out map[string]any
	okJSON(t, call(t, h.session(ws.Path), ToolDelete, map[string]any{"force": true}), &out)
	if out["deleted"] != true {
		t.Errorf("the forced delete answered %v, want deleted", out)
	}
	if _, err := os.Lstat(ws.Path); !os.IsNotExist(err) {
		t.Errorf("the forced delete left the worktree: %v", err)
	}
}

// A workspace's own delete answers at once (its agent is stopped next):
// the teardown's failure keeps the workspace, and the log says why.
func TestAnAgentsOwnDeleteWhoseTeardownFailsKeepsTheWorkspace(t *testing.T) {
	teardown := `sh -c "exit 5"`
	h := newTeardownHarness(t, &teardown)
	ws := h.create("mine")
	var out map[string]any
	okJSON(t, call(t, h.sessionAs(h.tokenOf(ws.Path), ws.Path), ToolDelete, nil), &out)
	if out["started"] != true {
		t.Fatalf("answered %v", out)
	}
	h.waitBackground()
	if _, err := h.mgr.Resolve(ws.Path); err != nil {
		t.Fatalf("the workspace went although its teardown failed: %v", err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "background workspace delete failed") || !strings.Contains(logs, "exit code 5") {
		t.Errorf("the log does not say why the delete failed:\n%s", logs)
	}

	// Only the user overrules a failed teardown.
	code, msg := errCode(t, call(t, h.sessionAs(h.tokenOf(ws.Path), ws.Path), ToolDelete, map[string]any{"force": true}))
	if code != workspace.CodeForbidden || !strings.Contains(msg, "only the user") {
		t.Fatalf("an agent's forced delete answered %s %q, want forbidden", code, msg)
	}
	h.waitBackground()
	if _, err := h.mgr.Resolve(ws.Path); err != nil {
		t.Fatalf("an agent's forced delete removed the workspace: %v", err)
	}

	teardown = "true"
	okJSON(t, call(t, h.sessionAs(h.tokenOf(ws.Path), ws.Path), ToolDelete, nil), &out)
	h.waitBackground()
	if _, err := os.Lstat(ws.Path); !os.IsNotExist(err) {
		t.Errorf("the delete with a teardown that succeeds left the worktree: %v", err)
	}
}
