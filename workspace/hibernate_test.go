package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestHibernationIsRecordedInTheWorktreesAdminFolderAndGoesWithIt(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	wt := filepath.Join(filepath.Dir(repo), "feat")
	testenv.Git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)

	if _, ok := HibernatedSince(wt); ok {
		t.Fatal("a new worktree is hibernated")
	}
	since := time.Date(2026, 11, 27, 9, 30, 0, 0, time.FixedZone("x", 3600))
	if err := MarkHibernated(wt, since); err != nil {
		t.Fatal(err)
	}
	got, ok := HibernatedSince(wt)
	if !ok || !got.Equal(since) {
		t.Errorf("HibernatedSince = %v, %v; want %v", got, ok, since)
	}
	file := filepath.Join(repo, ".git", "worktrees", "feat", HibernatedFile)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record %s: %v, %v", file, fi, err)
	}
	if err := UnmarkHibernated(wt); err != nil {
		t.Fatal(err)
	}
	if _, ok := HibernatedSince(wt); ok {
		t.Error("still hibernated after UnmarkHibernated")
	}
	if err := UnmarkHibernated(wt); err != nil {
		t.Errorf("a second UnmarkHibernated: %v", err)
	}

	// The main checkout is a project, never a workspace.
	if err := MarkHibernated(repo, since); err == nil {
		t.Error("the main checkout was marked hibernated")
	}
	// The record goes with the worktree's registration.
	if err := MarkHibernated(wt, since); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, repo, "worktree", "remove", "--force", wt)
	testenv.Git(t, repo, "worktree", "add", "-q", wt, "feat")
	if _, ok := HibernatedSince(wt); ok {
		t.Error("a worktree made again at the same path is hibernated")
	}
}
