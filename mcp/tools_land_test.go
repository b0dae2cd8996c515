package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// landCall calls tool as token (with header) and returns its answer
// decoded into out, or its error code and message.
func landCall(t *testing.T, f *family, token, header, tool string, args map[string]any, out any) (workspace.Code, string) {
	t.Helper()
	res := call(t, f.h.sessionAs(token, header), tool, args)
	if res.IsError {
		return errCode(t, res)
	}
	okJSON(t, res, out)
	return "", ""
}

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := testenv.GitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

// TestMergeIsForTheUserAndAParentOnItsChildrenNeverAnAgentOnItself: a
// parent lands its child's work and deletes it with cleanup; an agent on
// itself, on a sibling, a child on its parent are forbidden and change
// nothing; the user merges any workspace and is offered the delete.
func TestMergeIsForTheUserAndAParentOnItsChildrenNeverAnAgentOnItself(t *testing.T) {
	f := newFamily(t)
	testenv.CommitFile(t, f.child.Path, "child-work.txt", "the child's work\n", "child's work")
	testenv.CommitFile(t, f.a.Path, "a-work.txt", "A's work\n", "A's work")
	testenv.CommitFile(t, f.sibling.Path, "sibling-work.txt", "the sibling's work\n", "sibling's work")
	tokA, tokChild := f.h.tokenOf(f.a.Path), f.h.tokenOf(f.child.Path)
	mainBefore := testenv.Git(t, f.h.project, "rev-parse", "main")

	var out mergeOutput
	code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.a.Path}, &out)
	if code != workspace.CodeForbidden || !strings.Contains(msg, "its own workspace") {
		t.Errorf("A merging itself: %s %q, want forbidden saying why", code, msg)
	}
	if code, _ := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.a.Path, "preflight": true}, &out); code != workspace.CodeForbidden {
		t.Errorf("A's preflight of itself: %s, want forbidden", code)
	}
	if code, _ := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.sibling.Path}, &out); code != workspace.CodeForbidden {
		t.Errorf("A merging a sibling: %s, want forbidden", code)
	}
	if code, _ := landCall(t, f, tokChild, "", ToolMerge, map[string]any{"workspace": f.a.Path}, &out); code != workspace.CodeForbidden {
		t.Errorf("the child merging its parent: %s, want forbidden", code)
	}
	if code, _ := landCall(t, f, tokA, "", ToolMerge, nil, &out); code != workspace.CodeInvalidInput {
		t.Errorf("no workspace named: %s, want invalid-input", code)
	}
	if got := testenv.Git(t, f.h.project, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("a refused merge moved main to %s", got)
	}

	out = mergeOutput{}
	if code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "cleanup": true}, &out); code != "" {
		t.Fatalf("A merging its child: %s %s", code, msg)
	}
	if !out.Merged || !out.Verified || out.Cleanup != cleanupDone || out.Preflight.Target != "main" {
		t.Fatalf("A merging its child: %+v", out)
	}
	if b, err := os.ReadFile(filepath.Join(f.h.project, "child-work.txt")); err != nil || string(b) != "the child's work\n" {
		t.Errorf("the main checkout does not have the child's work: %q %v", b, err)
	}
	if testenv.Exists(f.child.Path) || branchExists(t, f.h.project, "child") {
		t.Errorf("cleanup left the child's worktree (%v) or branch (%v)", testenv.Exists(f.child.Path), branchExists(t, f.h.project, "child"))
	}

	out = mergeOutput{}
	user := f.h.token.Value()
	if code, msg := landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.sibling.Path, "strategy": "squash"}, &out); code != "" {
		t.Fatalf("the user merging a sibling: %s %s", code, msg)
	}
	if !out.Merged || !out.Verified || out.Cleanup != cleanupOffered || !testenv.Exists(f.sibling.Path) {
		t.Fatalf("the user merging a sibling: %+v", out)
	}
	if code, msg := landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.a.Path, "strategy": "rebase"}, &out); code != "" || !out.Verified {
		t.Fatalf("the user merging A: %s %s %+v", code, msg, out)
	}
}

// TestMergeRefusalsNameWhatIsInTheWayAndMoveNothing: conflicts,
// uncommitted files, and a target checked out with changes are refused
// with the files named, main unmoved; once the checkout is clean the
// merge moves it with main.
func TestMergeRefusalsNameWhatIsInTheWayAndMoveNothing(t *testing.T) {
	f := newFamily(t)
	user := f.h.token.Value()
	testenv.CommitFile(t, f.child.Path, "README.md", "the child's readme\n", "child edits the readme")
	testenv.CommitFile(t, f.h.project, "README.md", "the user's readme\n", "user edits the readme")
	mainBefore := testenv.Git(t, f.h.project, "rev-parse", "main")
	tokA := f.h.tokenOf(f.a.Path)

	var out mergeOutput
	if code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "preflight": true}, &out); code != "" {
		t.Fatalf("preflight: %s %s", code, msg)
	}
	if out.Preflight.CanMerge || len(out.Preflight.Conflicts) != 1 || out.Preflight.Conflicts[0] != "README.md" || out.Merged || out.Preflight.CheckedOutAt != f.h.project {
		t.Fatalf("preflight %+v", out)
	}
	code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path}, &out)
	if code != workspace.CodeConflict || !strings.Contains(msg, "README.md") {
		t.Errorf("merging a conflicting child: %s %q", code, msg)
	}

	testenv.CommitFile(t, f.sibling.Path, "sibling.txt", "done\n", "sibling's work")
	testenv.WriteFile(t, filepath.Join(f.sibling.Path, "wip.txt"), "not committed\n")
	code, msg = landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.sibling.Path}, &out)
	if code != workspace.CodeConflict || !strings.Contains(msg, "wip.txt") {
		t.Errorf("merging uncommitted work: %s %q", code, msg)
	}
	if err := os.Remove(filepath.Join(f.sibling.Path, "wip.txt")); err != nil {
		t.Fatal(err)
	}

	testenv.WriteFile(t, filepath.Join(f.h.project, "README.md"), "the user's unsaved edit\n")
	code, msg = landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.sibling.Path}, &out)
	if code != workspace.CodeConflict || !strings.Contains(msg, "README.md") || !strings.Contains(msg, f.h.project) {
		t.Errorf("merging into a dirty checkout: %s %q", code, msg)
	}
	if got := testenv.Git(t, f.h.project, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("a refused merge moved main to %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(f.h.project, "README.md")); string(b) != "the user's unsaved edit\n" {
		t.Fatalf("the user's edit changed: %q", b)
	}

	testenv.Git(t, f.h.project, "checkout", "--", "README.md")
	if code, msg := landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.sibling.Path}, &out); code != "" || !out.Merged || !out.Verified {
		t.Fatalf("merging into the clean checkout: %s %s %+v", code, msg, out)
	}
	if b, err := os.ReadFile(filepath.Join(f.h.project, "sibling.txt")); err != nil || string(b) != "done\n" {
		t.Errorf("the main checkout did not move with main: %q %v", b, err)
	}
	if st := testenv.Git(t, f.h.project, "status", "--porcelain"); st != "" {
		t.Errorf("the main checkout shows changes: %q", st)
	}
}

// TestUpdateFromBaseForOneselfAndAChildWithConflictsNamed: an agent
// updates itself and its child, not a sibling; a conflict names the file
// and leaves the workspace as it was.
func TestUpdateFromBaseForOneselfAndAChildWithConflictsNamed(t *testing.T) {
	f := newFamily(t)
	testenv.CommitFile(t, f.h.project, "from-main.txt", "new on main\n", "main moves on")
	testenv.CommitFile(t, f.a.Path, "a.txt", "A's\n", "A's work")
	tokA := f.h.tokenOf(f.a.Path)

	var res workspace.UpdateResult
	if code, msg := landCall(t, f, tokA, "", ToolUpdateFromBase, map[string]any{"mode": "rebase"}, &res); code != "" || !res.Updated || res.Base != "main" {
		t.Fatalf("A updating itself: %s %s %+v", code, msg, res)
	}
	if !testenv.Exists(filepath.Join(f.a.Path, "from-main.txt")) {
		t.Error("A's worktree does not have main's file")
	}
	if code, msg := landCall(t, f, tokA, "", ToolUpdateFromBase, map[string]any{"workspace": f.child.Path, "mode": "merge"}, &res); code != "" || !res.Updated {
		t.Fatalf("A updating its child: %s %s %+v", code, msg, res)
	}
	if code, _ := landCall(t, f, tokA, "", ToolUpdateFromBase, map[string]any{"workspace": f.sibling.Path, "mode": "merge"}, &res); code != workspace.CodeForbidden {
		t.Errorf("A updating a sibling: %s, want forbidden", code)
	}

	testenv.CommitFile(t, f.sibling.Path, "from-main.txt", "the sibling's own\n", "sibling clashes")
	head := testenv.Git(t, f.sibling.Path, "rev-parse", "HEAD")
	code, msg := landCall(t, f, f.h.token.Value(), f.a.Path, ToolUpdateFromBase, map[string]any{"workspace": f.sibling.Path, "mode": "rebase"}, &res)
	if code != workspace.CodeConflict || !strings.Contains(msg, "from-main.txt") {
		t.Errorf("a conflicting update: %s %q", code, msg)
	}
	if got := testenv.Git(t, f.sibling.Path, "rev-parse", "HEAD"); got != head || testenv.Git(t, f.sibling.Path, "status", "--porcelain") != "" {
		t.Errorf("a conflicting update changed the workspace: head %s (was %s)", got, head)
	}
}

// TestWorkspaceListTellsAParentWhatItsChildrenChangedAndWhetherTheyMergeCleanly.
func TestWorkspaceListTellsAParentWhatItsChildrenChangedAndWhetherTheyMergeCleanly(t *testing.T) {
	f := newFamily(t)
	testenv.CommitFile(t, f.child.Path, "README.md", "the child's readme\n", "child edits the readme")
	testenv.WriteFile(t, filepath.Join(f.child.Path, "new.txt"), "untracked\n")
	testenv.CommitFile(t, f.sibling.Path, "s.txt", "s\n", "sibling's work")
	for _, ws := range []workspace.Workspace{f.child, f.sibling} {
		testenv.Git(t, f.h.project, "config", "branch."+ws.Branch+".codehydra.pr", "https://forge.example/pr/1")
	}
	got := list(t, f, f.h.tokenOf(f.a.Path), "")
	child := got["child"]
	if child.ChangedFiles == nil || *child.ChangedFiles != 2 || child.MergesCleanly == nil || !*child.MergesCleanly {
		t.Fatalf("child entry: changedFiles %v, mergesCleanly %v", child.ChangedFiles, child.MergesCleanly)
	}
	if s := got["sibling"]; s.ChangedFiles != nil || s.MergesCleanly != nil || s.PR != "" {
		t.Errorf("A is told of a sibling's changes or pull request: %+v", s)
	}
	if child.PR != "https://forge.example/pr/1" {
		t.Errorf("child entry's pr = %q, want the recorded pull request", child.PR)
	}

	testenv.CommitFile(t, f.h.project, "README.md", "the user's readme\n", "user edits the readme")
	got = list(t, f, f.h.token.Value(), "")
	if c := got["child"]; c.MergesCleanly == nil || *c.MergesCleanly {
		t.Errorf("the user is not told the child conflicts: %v", c.MergesCleanly)
	}
	if s := got["sibling"]; s.ChangedFiles == nil || *s.ChangedFiles != 1 || s.MergesCleanly == nil || !*s.MergesCleanly {
		t.Errorf("the user's sibling entry: %v %v", s.ChangedFiles, s.MergesCleanly)
	}
}
