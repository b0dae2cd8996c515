package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"codehydra/internal/testenv"
)

func TestChangesListsChangedAndUntrackedFilesButNotIgnoredOnes(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	dir := ws.Path
	testenv.CommitFile(t, dir, ".gitignore", "*.log\n", "ignore logs")
	testenv.CommitFile(t, dir, "old name.txt", "o", "a file to rename")
	testenv.CommitFile(t, dir, "gone.txt", "g", "a file to delete")
	testenv.WriteFile(t, filepath.Join(dir, "README.md"), "changed")
	testenv.WriteFile(t, filepath.Join(dir, "staged.txt"), "s")
	testenv.Git(t, dir, "add", "staged.txt")
	testenv.Git(t, dir, "mv", "old name.txt", "new name.txt")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(dir, "new file.txt"), "n")
	testenv.WriteFile(t, filepath.Join(dir, "notes", "a.txt"), "a")
	testenv.WriteFile(t, filepath.Join(dir, "debug.log"), "noise")

	c, err := m.Changes(context.Background(), ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.Changed)
	slices.Sort(c.Untracked)
	if want := []string{"README.md", "gone.txt", "new name.txt", "staged.txt"}; !slices.Equal(c.Changed, want) {
		t.Errorf("Changed = %q, want %q", c.Changed, want)
	}
	if want := []string{"new file.txt", "notes/"}; !slices.Equal(c.Untracked, want) {
		t.Errorf("Untracked = %q, want %q", c.Untracked, want)
	}
}

func TestChangesOfACleanWorkspaceAreNoneAndOfAnUnknownOneAnError(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	c, err := m.Changes(context.Background(), ws.Path)
	if err != nil || len(c.Changed)+len(c.Untracked) != 0 {
		t.Errorf("clean workspace: %+v, %v; want none and no error", c, err)
	}
	if _, err := m.Changes(context.Background(), filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("Changes of a folder that is no workspace did not fail")
	}
}
