package workspace

import (
	"context"
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
)

// deleteDone deletes the workspace at path with o and returns the note of
// its done event.
func deleteDone(t *testing.T, m *Manager, path string, o DeleteOptions) string {
	t.Helper()
	ev := record(t, m)
	if err := m.Delete(context.Background(), path, o); err != nil {
		t.Fatal(err)
	}
	done := ev.waitFor(t, soon, "delete done", func(e Event) bool {
		return e.Kind == EventDeleteProgress && e.Step == StepDone && e.Workspace.Path == path
	})
	return done.Note
}

func TestDeleteKeepsABranchThatExistedBeforeTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// workspace makes the workspace on branch b and returns its path.
		workspace func(t *testing.T, m *Manager, p Project, b string) string
		opts      DeleteOptions
		wantKept  bool
		wantNote  string
		// wantCreated is what BranchCreated says before the delete.
		wantCreated bool
	}{
		{
			name: "a branch CodeHydra created is deleted",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				return create(t, m, p, b).Path
			},
			wantCreated: true,
		},
		{
			name: "an existing branch given to Create is kept",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				testenv.Git(t, p.Path, "branch", b)
				return create(t, m, p, b).Path
			},
			wantKept: true,
			wantNote: "kept branch feature: it existed before the workspace",
		},
		{
			name: "the branch of a worktree made outside the app is kept",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				wt := filepath.Join(realDir(t), "outside")
				testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", b, wt)
				m.refresh(context.Background(), projectOf(t, m, p.Path), true)
				return wt
			},
			wantKept: true,
			wantNote: "kept branch feature: it existed before the workspace",
		},
		{
			name: "a branch CodeHydra created, kept, then reused by a new workspace is kept",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				first := create(t, m, p, b)
				if err := m.Delete(context.Background(), first.Path, DeleteOptions{KeepBranch: true}); err != nil {
					t.Fatal(err)
				}
				return create(t, m, p, b).Path
			},
			wantKept: true,
			wantNote: "kept branch feature: it existed before the workspace",
		},
		{
			name: "an existing branch is deleted when the user asks",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				testenv.Git(t, p.Path, "branch", b)
				return create(t, m, p, b).Path
			},
			opts: DeleteOptions{DeleteBranch: true},
		},
		{
			name: "keepBranch wins over deleteBranch",
			workspace: func(t *testing.T, m *Manager, p Project, b string) string {
				return create(t, m, p, b).Path
			},
			opts:        DeleteOptions{KeepBranch: true, DeleteBranch: true},
			wantKept:    true,
			wantCreated: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, p := setup(t)
			path := tc.workspace(t, m, p, "feature")
			if created, err := m.BranchCreated(context.Background(), path); err != nil || created != tc.wantCreated {
				t.Errorf("BranchCreated = %v, %v; want %v", created, err, tc.wantCreated)
			}
			note := deleteDone(t, m, path, tc.opts)
			if exists(path) {
				t.Fatal("worktree left")
			}
			if got := branchExists(t, p.Path, "feature"); got != tc.wantKept {
				t.Errorf("branch kept = %v, want %v", got, tc.wantKept)
			}
			if note != tc.wantNote {
				t.Errorf("done note = %q, want %q", note, tc.wantNote)
			}
		})
	}
}

func TestAnAgentCannotMarkABranchAsCreatedByCodeHydraThroughMetadata(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "x")
	// The user's branch whose record would share its config name with a
	// metadata key of branch x.
	wt := filepath.Join(realDir(t), "users")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "x.codehydra", wt)
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	for _, key := range []string{"codehydracreated", "created-branch", "createdbranch"} {
		v := "true"
		if err := m.SetMetadata(context.Background(), ws.Path, key, &v); err != nil {
			t.Fatal(err)
		}
	}
	if note := deleteDone(t, m, wt, DeleteOptions{}); note != "kept branch x.codehydra: it existed before the workspace" {
		t.Errorf("done note = %q", note)
	}
	if !branchExists(t, p.Path, "x.codehydra") {
		t.Fatal("the user's branch was deleted")
	}
}
