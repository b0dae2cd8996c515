package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
)

// branchConfig is every git config value of branch b in repo: its
// metadata and the record that CodeHydra created it.
func branchConfig(t *testing.T, repo, b string) string {
	t.Helper()
	out, _ := testenv.GitErr(repo, "config", "--get-regexp", `^branch\.`+b+`\.codehydra`)
	return out
}

func TestADeleteThatKeepsTheBranchKeepsItsMetadata(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing bool
		opts     DeleteOptions
	}{
		{name: "keep branch", opts: DeleteOptions{KeepBranch: true}},
		{name: "a branch that existed before the workspace", existing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, p := setup(t)
			if tc.existing {
				testenv.Git(t, p.Path, "branch", "kept")
			}
			ws := create(t, m, p, "kept")
			if err := m.SetMetadata(context.Background(), ws.Path, "note", ptr("years of notes")); err != nil {
				t.Fatal(err)
			}
			before := branchConfig(t, p.Path, "kept")
			deleteDone(t, m, ws.Path, tc.opts)
			if exists(ws.Path) || !branchExists(t, p.Path, "kept") {
				t.Fatal("want the worktree gone and the branch kept")
			}
			if after := branchConfig(t, p.Path, "kept"); after != before {
				t.Fatalf("the kept branch's config went from %q to %q", before, after)
			}
			// A workspace made again on the kept branch finds its metadata.
			again := create(t, m, p, "kept")
			md, err := m.Metadata(context.Background(), again.Path)
			if err != nil {
				t.Fatal(err)
			}
			if md["note"] != "years of notes" || md["base"] != "main" {
				t.Fatalf("metadata of the workspace made again = %v", md)
			}
		})
	}
}

func TestAFailedDeleteNeverLeavesAWorkspaceWithoutItsMetadata(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		step DeleteStep
		// fault makes step fail and returns what undoes it.
		fault func(t *testing.T, agents *fakeAgents, p Project, ws Workspace) (undo func())
	}{
		{StepStopAgent, func(t *testing.T, agents *fakeAgents, _ Project, _ Workspace) func() {
			agents.failStops(errors.New("still running"))
			return func() { agents.failStops(nil) }
		}},
		{StepRemoveWorktree, func(t *testing.T, _ *fakeAgents, p Project, ws Workspace) func() {
			testenv.Git(t, p.Path, "worktree", "lock", "--reason", "on a stick", ws.Path)
			return func() { testenv.Git(t, p.Path, "worktree", "unlock", ws.Path) }
		}},
		{StepDeleteBranch, func(t *testing.T, _ *fakeAgents, p Project, _ Workspace) func() {
			lock := filepath.Join(p.Path, ".git", "refs", "heads", "doomed.lock")
			testenv.WriteFile(t, lock, "")
			return func() { os.Remove(lock) }
		}},
		{StepRemoveMetadata, func(t *testing.T, _ *fakeAgents, p Project, _ Workspace) func() {
			lock := filepath.Join(p.Path, ".git", "config.lock")
			testenv.WriteFile(t, lock, "")
			return func() { os.Remove(lock) }
		}},
	} {
		t.Run(string(tc.step), func(t *testing.T) {
			t.Parallel()
			agents := &fakeAgents{}
			m, p := setupWith(t, agents)
			ws := create(t, m, p, "doomed")
			if err := m.SetMetadata(context.Background(), ws.Path, "note", ptr("mine")); err != nil {
				t.Fatal(err)
			}
			before := branchConfig(t, p.Path, "doomed")
			undo := tc.fault(t, agents, p, ws)
			ev := record(t, m)
			if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err == nil {
				t.Fatal("the delete succeeded despite the fault")
			}
			failed := ev.waitFor(t, soon, "delete-failed", func(e Event) bool { return e.Kind == EventDeleteFailed })
			if failed.Step != tc.step {
				t.Fatalf("failed at %s, want %s", failed.Step, tc.step)
			}
			left := exists(ws.Path) || branchExists(t, p.Path, "doomed")
			if after := branchConfig(t, p.Path, "doomed"); left && after != before {
				t.Fatalf("the failed delete left the worktree or the branch, with its config %q (was %q)", after, before)
			}
			undo()
			if err := m.Delete(context.Background(), ws.Path, DeleteOptions{}); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if exists(ws.Path) || branchExists(t, p.Path, "doomed") {
				t.Fatal("the second delete left the worktree or the branch")
			}
			if out := branchConfig(t, p.Path, "doomed"); out != "" {
				t.Fatalf("the second delete left the branch's config %q", out)
			}
		})
	}
}
