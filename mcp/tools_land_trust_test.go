package mcp

import (
	"context"
	"strings"
	"testing"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// workspacesPort names Workspaces for embedding: the interface has a
// method of that name.
type workspacesPort = Workspaces

// commitBeforeDelete is the manager, whose delete of a workspace first
// commits late.txt there: the child's agent committing between the
// merge's check and the delete.
type commitBeforeDelete struct {
	workspacesPort
	t    *testing.T
	path string
}

func (c *commitBeforeDelete) StartDelete(ctx context.Context, wsPath string, o workspace.DeleteOptions) (func(context.Context) error, error) {
	run, err := c.workspacesPort.StartDelete(ctx, wsPath, o)
	if err != nil || wsPath != c.path {
		return run, err
	}
	return func(ctx context.Context) error {
		testenv.CommitFile(c.t, wsPath, "late.txt", "written after the merge\n", "late work")
		return run(ctx)
	}, nil
}

// TestMergeCleanupKeepsAWorkspaceThatMovedAfterTheMerge: a commit made in
// the child between the merge and its delete keeps the workspace and its
// branch, and the answer says the cleanup failed and why; without one,
// the cleanup deletes the child, also after a rebase that moved its
// branch to the replayed commits.
func TestMergeCleanupKeepsAWorkspaceThatMovedAfterTheMerge(t *testing.T) {
	for _, strategy := range []string{"merge", "rebase"} {
		t.Run(strategy, func(t *testing.T) {
			var late *commitBeforeDelete
			f := newFamily(t, func(o *Options) {
				late = &commitBeforeDelete{workspacesPort: o.Workspaces, t: t}
				o.Workspaces = late
			})
			testenv.CommitFile(t, f.h.project, "main.txt", "main moves on\n", "main's work")
			testenv.CommitFile(t, f.child.Path, "child.txt", "the child's work\n", "child's work")
			tokA := f.h.tokenOf(f.a.Path)

			late.path = f.child.Path
			var out mergeOutput
			if code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "strategy": strategy, "cleanup": true}, &out); code != "" {
				t.Fatalf("A merging its child: %s %s", code, msg)
			}
			if !out.Verified || !strings.HasPrefix(out.Cleanup, "failed: ") || !strings.Contains(out.Cleanup, "not deleted") {
				t.Fatalf("merge with a late commit: %+v, want verified and the cleanup failed saying why", out)
			}
			if !testenv.Exists(f.child.Path) || !branchExists(t, f.h.project, "child") {
				t.Fatal("the cleanup deleted a workspace with a commit made after the merge")
			}
			if got := testenv.Git(t, f.child.Path, "log", "-1", "--format=%s"); got != "late work" {
				t.Fatalf("the child's head is %q, want the late commit", got)
			}

			// Nothing new since: the cleanup goes ahead, at the head the
			// merge verified (for a rebase, the replayed one).
			late.path = ""
			testenv.CommitFile(t, f.child.Path, "more.txt", "more\n", "more work")
			out = mergeOutput{}
			if code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "strategy": strategy, "cleanup": true}, &out); code != "" {
				t.Fatalf("A merging its child again: %s %s", code, msg)
			}
			if !out.Verified || out.Cleanup != cleanupDone || testenv.Exists(f.child.Path) || branchExists(t, f.h.project, "child") {
				t.Fatalf("merge without a late commit: %+v; child there %v", out, testenv.Exists(f.child.Path))
			}
		})
	}
}

// TestAgentLandsOnlyCreatedBranchesIntoTheBaseOrItsOwn: a child on a
// branch that existed before it is the user's: its parent may neither
// merge it nor update it from its base, the user may. A parent's target
// is its child's base or its own branch; any other is forbidden.
func TestAgentLandsOnlyCreatedBranchesIntoTheBaseOrItsOwn(t *testing.T) {
	f := newFamily(t)
	testenv.CommitFile(t, f.child.Path, "child.txt", "the child's work\n", "child's work")
	testenv.Git(t, f.h.project, "branch", "release")
	tokA, user := f.h.tokenOf(f.a.Path), f.h.token.Value()

	var out mergeOutput
	code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "target": "release"}, &out)
	if code != workspace.CodeForbidden || !strings.Contains(msg, "release") || !strings.Contains(msg, "base") {
		t.Errorf("A merging its child into release: %s %q, want forbidden naming the base", code, msg)
	}
	if code, _ := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "target": "sibling", "preflight": true}, &out); code != workspace.CodeForbidden {
		t.Errorf("A's preflight into a sibling's branch: %s, want forbidden", code)
	}
	for _, target := range []string{"main", "refs/heads/main", "featA"} {
		if code, msg := landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "target": target, "preflight": true}, &out); code != "" || !out.Preflight.CanMerge {
			t.Errorf("A's preflight into %s: %s %s %+v", target, code, msg, out.Preflight)
		}
	}
	if code, msg := landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.child.Path, "target": "release", "preflight": true}, &out); code != "" {
		t.Errorf("the user's preflight into release: %s %s", code, msg)
	}

	// The child's branch existed before it, as when workspace_create
	// reuses a branch of the user's.
	testenv.Git(t, f.h.project, "config", "--unset", "branch.child.codehydracreated")
	mainBefore := testenv.Git(t, f.h.project, "rev-parse", "main")
	code, msg = landCall(t, f, tokA, "", ToolMerge, map[string]any{"workspace": f.child.Path, "cleanup": true}, &out)
	if code != workspace.CodeForbidden || !strings.Contains(msg, "user") {
		t.Errorf("A merging a child on the user's branch: %s %q, want forbidden", code, msg)
	}
	var res workspace.UpdateResult
	if code, _ := landCall(t, f, tokA, "", ToolUpdateFromBase, map[string]any{"workspace": f.child.Path, "mode": "rebase"}, &res); code != workspace.CodeForbidden {
		t.Errorf("A updating a child on the user's branch: %s, want forbidden", code)
	}
	if got := testenv.Git(t, f.h.project, "rev-parse", "main"); got != mainBefore || !testenv.Exists(f.child.Path) {
		t.Fatal("a refused merge moved main or deleted the child")
	}
	if code, msg := landCall(t, f, user, f.a.Path, ToolMerge, map[string]any{"workspace": f.child.Path}, &out); code != "" || !out.Verified {
		t.Fatalf("the user merging the child: %s %s %+v", code, msg, out)
	}
}
