package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

func TestAHeldIndexLockIsAConflictThatNamesTheFile(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	lock := filepath.Join(repo, ".git", "index.lock")
	testenv.WriteFile(t, lock, "")
	testenv.WriteFile(t, filepath.Join(repo, "new.txt"), "x")
	g := newGitRunner("")
	_, err := g.run(context.Background(), repo, "add", "new.txt")
	if err == nil {
		t.Fatal("git add succeeded with index.lock held")
	}
	err = classify(err, CodeInternal, "cannot stage")
	wantCode(t, err, CodeConflict)
	want := "cannot stage: another git process holds " + lock + "; try again when it finishes"
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %q, want it to start with %q", err, want)
	}
}

func TestGitErrorsCarryStderr(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	_, err := newGitRunner("").run(context.Background(), repo, "rev-parse", "--verify", "no-such-ref")
	var ge *gitError
	if !errors.As(err, &ge) || ge.ExitCode != 128 || !strings.Contains(err.Error(), "Needed a single revision") {
		t.Fatalf("err = %v", err)
	}
	err = classify(err, CodeInvalidInput, "cannot find %s", "x")
	wantCode(t, err, CodeInvalidInput)
	if !strings.Contains(err.Error(), "cannot find x") || !strings.Contains(err.Error(), "Needed a single revision") {
		t.Fatalf("classified error = %q", err)
	}
}

func TestGitIgnoresInheritedRepositoryVariables(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	other := testenv.GitRepo(t, "project")
	g := newGitRunner("")
	g.environ = func() []string {
		return []string{"GIT_DIR=" + filepath.Join(other, ".git"), "GIT_WORK_TREE=" + other, "LC_ALL=de_DE.UTF-8", "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	}
	out, err := g.run(context.Background(), repo, "rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != repo {
		t.Fatalf("git ran in %q, want %s", out, repo)
	}
}

func TestGitHonoursTheContextDeadline(t *testing.T) {
	t.Parallel()
	repo := testenv.GitRepo(t, "project")
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := newGitRunner("").run(ctx, repo, "status")
	if CodeOf(err) != CodeTimeout {
		t.Fatalf("err = %v (%s), want timeout", err, CodeOf(err))
	}
}
