package workspace

import (
	"context"
	"path/filepath"
	"testing"

	"codehydra/internal/testenv"
)

// Names that reach git from outside the app (a branch made by plain git,
// a base read from the config) may start with "-"; git must take them as
// names, never as options.

// dashBranch makes branch "-x" with plain git (git branch refuses such a
// name) and a worktree outside the app checked out on it.
func dashBranch(t *testing.T, repo string) (wtPath string) {
	t.Helper()
	testenv.Git(t, repo, "update-ref", "refs/heads/-x", "HEAD")
	wtPath = filepath.Join(realDir(t), "dash")
	testenv.Git(t, repo, "worktree", "add", "-q", "--detach", wtPath)
	testenv.Git(t, wtPath, "symbolic-ref", "HEAD", "refs/heads/-x")
	return wtPath
}

func TestDeleteTakesABranchNamedLikeAnOptionAsAName(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	wtPath := dashBranch(t, repo)
	m, _ := newManager(t, Options{Projects: []string{repo}})
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Resolve(wtPath)
	if err != nil || ws.Branch != "-x" {
		t.Fatalf("Resolve = %+v, %v; want the workspace on branch -x", ws, err)
	}
	if err := m.Delete(context.Background(), wtPath, DeleteOptions{DeleteBranch: true}); err != nil {
		t.Fatal(err)
	}
	if exists(wtPath) || branchExists(t, repo, "-x") {
		t.Fatal("the worktree or branch -x is left")
	}
	if !branchExists(t, repo, "main") {
		t.Fatal("branch main is gone")
	}
}

func TestABaseNamedLikeAnOptionIsLookedUpAsAName(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.Git(t, p.Path, "update-ref", "refs/heads/-x", "HEAD")
	base, existed, err := m.createBase(context.Background(), projectOf(t, m, p.Path), CreateOptions{ProjectPath: p.Path, Name: "fresh", Base: "-x"})
	if err != nil || base != "-x" || existed {
		t.Fatalf("createBase = %q, %v, %v; want -x, false, nil", base, existed, err)
	}
}
