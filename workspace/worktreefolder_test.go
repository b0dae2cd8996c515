package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// userFolder is a folder of the user's outside every project, holding a
// file; it returns the folder and the file.
func userFolder(t *testing.T) (dir, file string) {
	t.Helper()
	dir = filepath.Join(realDir(t), "my-documents")
	file = filepath.Join(dir, "thesis.txt")
	testenv.WriteFile(t, file, "years of work")
	return dir, file
}

func wantFile(t *testing.T, file, content string) {
	t.Helper()
	if b, err := os.ReadFile(file); err != nil || string(b) != content {
		t.Fatalf("%s = %q, %v; want %q", file, b, err, content)
	}
}

// wantNoStep checks that a refused delete published no step. The marker
// event comes after anything the delete published.
func wantNoStep(t *testing.T, m *Manager, ev *events) {
	t.Helper()
	m.Publish(Event{Kind: "test-marker"})
	ev.waitFor(t, soon, "marker", func(e Event) bool { return e.Kind == "test-marker" })
	for _, e := range ev.all() {
		if e.Kind == EventDeleteProgress || e.Kind == EventDeleteFailed {
			t.Errorf("the refused delete ran a step: %+v", e)
		}
	}
}

func TestAWorktreeFolderReplacedByASymlinkIsNeitherListedNorDeletedAsItsTarget(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	target, file := userFolder(t)
	if err := os.RemoveAll(ws.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ws.Path); err != nil {
		t.Fatal(err)
	}

	// A fresh launch discovers the project as it is now.
	m, _ = newManager(t, Options{Projects: []string{p.Path}})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, w := range m.AllWorkspaces() {
		if pathKey(w.Path) == pathKey(target) {
			t.Fatalf("the symlink's target %s is listed as a workspace: %+v", target, w)
		}
	}

	wantCode(t, m.Delete(context.Background(), target, DeleteOptions{}), CodeWorkspaceNotFound)
	ev := record(t, m)
	err := m.Delete(context.Background(), ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	// Refused before it began: no step ran (the agent was not stopped)
	// and the branch's metadata is still there.
	wantNoStep(t, m, ev)
	if got := testenv.Git(t, p.Path, "config", "--get", "branch.ws.codehydra.base"); got == "" {
		t.Error("the refused delete removed the branch's metadata")
	}
	if !strings.Contains(err.Error(), "symlink") {
		t.Errorf("error %q does not say the folder is a symlink", err)
	}
	wantFile(t, file, "years of work")
	if fi, err := os.Lstat(ws.Path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink at %s was touched: %v", ws.Path, err)
	}
}

// tamperings are the ways a worktree folder and git's record of it stop
// pointing at each other; other is a second worktree of the project.
var tamperings = []struct {
	name   string
	tamper func(t *testing.T, ws, other Workspace)
}{
	{"its .git names another worktree's admin folder", func(t *testing.T, ws, other Workspace) {
		admin := testenv.Git(t, other.Path, "rev-parse", "--absolute-git-dir")
		testenv.WriteFile(t, filepath.Join(ws.Path, ".git"), "gitdir: "+admin+"\n")
	}},
	{"its .git names another repository", func(t *testing.T, ws, _ Workspace) {
		repo := testenv.GitRepo(t, "elsewhere")
		testenv.WriteFile(t, filepath.Join(ws.Path, ".git"), "gitdir: "+filepath.Join(repo, ".git")+"\n")
	}},
	{"its .git is a repository of its own", func(t *testing.T, ws, _ Workspace) {
		if err := os.Remove(filepath.Join(ws.Path, ".git")); err != nil {
			t.Fatal(err)
		}
		testenv.Git(t, ws.Path, "init", "-q")
	}},
	{"its .git is gone", func(t *testing.T, ws, _ Workspace) {
		if err := os.Remove(filepath.Join(ws.Path, ".git")); err != nil {
			t.Fatal(err)
		}
	}},
	{"git's record points at another folder", func(t *testing.T, ws, other Workspace) {
		admin := testenv.Git(t, ws.Path, "rev-parse", "--absolute-git-dir")
		testenv.WriteFile(t, filepath.Join(admin, "gitdir"), filepath.Join(other.Path, ".git")+"\n")
	}},
}

func TestTheDeleteRemovesNoFolderWhoseGitFileDoesNotPointBack(t *testing.T) {
	t.Parallel()
	for _, tc := range tamperings {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, p := setup(t)
			ws := create(t, m, p, "ws")
			other := create(t, m, p, "other")
			file := filepath.Join(ws.Path, "work.txt")
			testenv.WriteFile(t, file, "keep")
			tc.tamper(t, ws, other)

			wantCode(t, m.Delete(context.Background(), ws.Path, DeleteOptions{}), CodeConflict)
			wantFile(t, file, "keep")
			if !exists(other.Path) {
				t.Fatal("the other worktree was removed")
			}
		})
	}
}

func TestAFolderThatIsNotGitsWorktreeIsRefusedBeforeAnyStep(t *testing.T) {
	t.Parallel()
	for _, tc := range tamperings {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			agents := &fakeAgents{}
			m, p := setupWith(t, agents)
			ws := create(t, m, p, "ws")
			other := create(t, m, p, "other")
			tc.tamper(t, ws, other)
			testenv.Git(t, p.Path, "config", "branch.ws.codehydra.note", "mine")
			ev := record(t, m)

			run, err := m.StartDelete(context.Background(), ws.Path, DeleteOptions{})
			if run != nil {
				t.Fatal("StartDelete returned work for a folder that is not git's worktree")
			}
			wantCode(t, err, CodeConflict)
			wantNoStep(t, m, ev)
			agents.mu.Lock()
			stopped := agents.stopped
			agents.mu.Unlock()
			if len(stopped) != 0 {
				t.Errorf("the refused delete stopped agents: %v", stopped)
			}
			if got := testenv.Git(t, p.Path, "config", "--get", "branch.ws.codehydra.note"); got != "mine" {
				t.Errorf("metadata note = %q after the refused delete, want mine", got)
			}
			if busy := m.busyKeys(); len(busy) != 0 {
				t.Errorf("reserved after the refused delete: %v", busy)
			}
		})
	}
}

func TestDeleteRefusesAWorkspaceThatHoldsAnotherWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	outer := create(t, m, p, "outer")
	inner := filepath.Join(outer.Path, "inner")
	testenv.Git(t, p.Path, "worktree", "add", "-q", "-b", "inner", inner)
	m.refresh(context.Background(), projectOf(t, m, p.Path), true)
	wantCode(t, m.Delete(context.Background(), outer.Path, DeleteOptions{}), CodeConflict)
	if !exists(filepath.Join(inner, "README.md")) {
		t.Fatal("the inner workspace was removed")
	}
}
