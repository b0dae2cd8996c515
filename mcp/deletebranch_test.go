package mcp

import (
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// A branch the user had before a workspace was made on it is the user's:
// a workspace's token may delete only a branch CodeHydra created, and a
// deleted branch's last commit is kept under refs/codehydra/deleted with a
// reflog entry (issue 21, point 3). Real git, real server, real HTTP.

// userBranch makes the user's branch name in h's project with one commit
// of its own (not pushed anywhere) and returns that commit.
func userBranch(t *testing.T, h *harness, name string) string {
	t.Helper()
	testenv.Git(t, h.project, "switch", "-q", "-c", name)
	tip := testenv.CommitFile(t, h.project, name+".txt", "the user's work\n", "the user's unpushed work")
	testenv.Git(t, h.project, "switch", "-q", "main")
	return tip
}

// keptRef is the ref that keeps the deleted branch's last commit, failing
// the test unless there is exactly one, naming want, whose reflog says why.
func keptRef(t *testing.T, h *harness, branch, want string) {
	t.Helper()
	refs := strings.Fields(testenv.Git(t, h.project, "for-each-ref", "--format=%(refname) %(objectname)", "refs/codehydra/deleted/"+branch+"/"))
	if len(refs) != 2 || refs[1] != want {
		t.Fatalf("refs keeping branch %s: %q, want one naming %s", branch, refs, want)
	}
	if log := testenv.Git(t, h.project, "reflog", "show", "--format=%gs", refs[0]); !strings.Contains(log, "codehydra: branch "+branch+" deleted with its workspace") {
		t.Fatalf("reflog of %s: %q", refs[0], log)
	}
}

// waitGone waits until the workspace at path is gone and the server's
// background delete has ended.
func waitGone(t *testing.T, h *harness, path string) {
	t.Helper()
	waitFor(t, "the workspace to be gone", func() bool {
		_, err := h.mgr.Resolve(path)
		return workspace.CodeOf(err) == workspace.CodeWorkspaceNotFound
	})
	h.waitBackground()
}

func TestAnAgentCannotDeleteTheUsersOwnBranch(t *testing.T) {
	h := newHarness(t)
	tip := userBranch(t, h, "user-feature")

	// Agent A makes a workspace on the user's existing branch; the child's
	// agent then asks to delete its workspace with the branch.
	a := h.create("a")
	var child workspace.Workspace
	okJSON(t, call(t, h.sessionAs(h.tokenOf(a.Path), a.Path), ToolCreate, map[string]any{"name": "user-feature"}), &child)
	if child.Branch != "user-feature" {
		t.Fatalf("child on branch %q", child.Branch)
	}
	cs := h.sessionAs(h.tokenOf(child.Path), child.Path)
	code, msg := errCode(t, call(t, cs, ToolDelete, map[string]any{"deleteBranch": true}))
	if code != workspace.CodeForbidden || !strings.Contains(msg, "only the user") || !strings.Contains(msg, "nothing was deleted") {
		t.Fatalf("deleteBranch on the user's branch: %s: %s", code, msg)
	}
	h.waitBackground()
	if _, err := h.mgr.Resolve(child.Path); err != nil {
		t.Fatalf("the workspace went although the delete was refused: %v", err)
	}
	if got := testenv.Git(t, h.project, "rev-parse", "refs/heads/user-feature"); got != tip {
		t.Fatalf("user-feature at %s, want %s", got, tip)
	}

	// Without deleteBranch the agent deletes its workspace; the branch stays.
	okJSON(t, call(t, cs, ToolDelete, map[string]any{}), &map[string]any{})
	waitGone(t, h, child.Path)
	if got := testenv.Git(t, h.project, "rev-parse", "refs/heads/user-feature"); got != tip {
		t.Fatalf("user-feature at %s after the agent's delete, want %s", got, tip)
	}
}

func TestTheUserDeletesTheirOwnBranchAndItsLastCommitIsKept(t *testing.T) {
	h := newHarness(t)
	tip := userBranch(t, h, "user-feature")
	ws := h.create("user-feature")
	okJSON(t, call(t, h.session(ws.Path), ToolDelete, map[string]any{"deleteBranch": true}), &map[string]any{})
	waitGone(t, h, ws.Path)
	if out := testenv.Git(t, h.project, "branch", "--list", "user-feature"); out != "" {
		t.Fatalf("the user's token asked to delete the branch, and it is still there: %q", out)
	}
	keptRef(t, h, "user-feature", tip)
}

func TestAnAgentDeletesABranchCodeHydraMadeAndItsLastCommitIsKept(t *testing.T) {
	h := newHarness(t)
	ws := h.create("scratch")
	tip := testenv.CommitFile(t, ws.Path, "work.txt", "the agent's work\n", "the agent's work")
	okJSON(t, call(t, h.sessionAs(h.tokenOf(ws.Path), ws.Path), ToolDelete, map[string]any{"deleteBranch": true}), &map[string]any{})
	waitGone(t, h, ws.Path)
	if out := testenv.Git(t, h.project, "branch", "--list", "scratch"); out != "" {
		t.Fatalf("branch left: %q", out)
	}
	keptRef(t, h, "scratch", tip)
}
