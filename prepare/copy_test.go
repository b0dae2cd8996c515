package prepare

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// newWorktree makes a repo with a worktree on branch feature; the worktree
// tracks tracked.txt (the main checkout has it untracked) and a symlink
// "linked" to a folder outside both.
func newWorktree(t *testing.T) (main, wt, outside string) {
	t.Helper()
	main = testenv.GitRepo(t, "proj")
	outside = t.TempDir()
	testenv.WriteFile(t, filepath.Join(outside, "secret"), "outside secret\n")
	wt = filepath.Join(filepath.Dir(main), "wt")
	testenv.Git(t, main, "worktree", "add", "-b", "feature", wt)
	testenv.WriteFile(t, filepath.Join(wt, "tracked.txt"), "tracked on the branch\n")
	testenv.Git(t, wt, "add", "tracked.txt")
	testenv.Git(t, wt, "commit", "-m", "track")
	return main, wt, outside
}

func TestCopyFilesCopiesUntrackedAndIgnoredKeepingModes(t *testing.T) {
	main, wt, _ := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, ".gitignore"), ".env*\n")
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	testenv.WriteFile(t, filepath.Join(main, ".env.local"), "KEY=2\n")
	testenv.WriteFile(t, filepath.Join(main, "config", "local.json"), "{}\n")
	testenv.WriteFile(t, filepath.Join(main, "bin", "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(main, "bin", "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	rep, err := CopyFiles(context.Background(), main, wt, []string{".env*", "config/local.json", "bin"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.Copied)
	want := []string{".env", ".env.local", "bin/run.sh", "config/local.json"}
	if !slices.Equal(rep.Copied, want) || len(rep.Unmatched) != 0 {
		t.Fatalf("report %+v, want copied %v", rep, want)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, ".env.local")); string(b) != "KEY=2\n" {
		t.Fatalf(".env.local in the worktree = %q", b)
	}
	info, err := os.Stat(filepath.Join(wt, "bin", "run.sh"))
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Fatalf("bin/run.sh mode %v (%v), want 0750", info.Mode(), err)
	}
}

func TestCopyFilesReportsPatternsThatMatchNothing(t *testing.T) {
	main, wt, _ := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	// README.md is tracked: a pattern naming it matches no untracked file.
	rep, err := CopyFiles(context.Background(), main, wt, []string{".env", "*.secret", "README.md"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Unmatched, []string{"*.secret", "README.md"}) || !slices.Equal(rep.Copied, []string{".env"}) {
		t.Fatalf("report %+v, want *.secret and README.md unmatched, .env copied", rep)
	}
}

func TestCopyFilesDoesNotOverwriteATrackedFile(t *testing.T) {
	main, wt, _ := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, "tracked.txt"), "untracked in main\n")
	rep, err := CopyFiles(context.Background(), main, wt, []string{"tracked.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "tracked.txt")); string(b) != "tracked on the branch\n" {
		t.Fatalf("tracked.txt was overwritten: %q", b)
	}
	if len(rep.Copied) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], "exists in the workspace") {
		t.Fatalf("report %+v, want tracked.txt skipped as existing", rep)
	}
}

func TestCopyFilesDoesNotFollowASymlinkOutOfTheCheckout(t *testing.T) {
	main, wt, outside := newWorktree(t)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(main, ".env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(main, "outdir")); err != nil {
		t.Fatal(err)
	}
	rep, err := CopyFiles(context.Background(), main, wt, []string{".env", "outdir", "outdir/*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".env", "outdir", filepath.Join("outdir", "secret")} {
		if _, err := os.Lstat(filepath.Join(wt, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists in the worktree (%v): a symlink out of the checkout was followed", name, err)
		}
	}
	if len(rep.Copied) != 0 || len(rep.Skipped) != 2 || !strings.Contains(strings.Join(rep.Skipped, "\n"), "leads out of the project's folder") {
		t.Fatalf("report %+v, want both links skipped as leading out", rep)
	}
}

func TestCopyFilesDoesNotWriteThroughASymlinkInTheWorktree(t *testing.T) {
	main, wt, outside := newWorktree(t)
	// The branch tracks a link "conf" to a folder outside; main has an
	// untracked conf/ folder whose file would land outside through it.
	if err := os.Symlink(outside, filepath.Join(wt, "conf")); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(main, "conf", "local.json"), "{}\n")
	rep, err := CopyFiles(context.Background(), main, wt, []string{"conf"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "local.json")); !os.IsNotExist(err) {
		t.Fatalf("a file was written outside the worktree through its symlink (%v)", err)
	}
	if len(rep.Copied) != 0 || len(rep.Skipped) != 1 {
		t.Fatalf("report %+v, want conf/local.json skipped", rep)
	}
}

// TestCopyFilesRunsNoFsmonitorOfTheRepository: the list of untracked files
// comes from a git run as CodeHydra runs every git, so a core.fsmonitor
// in the repository's config (which git would run) does not run.
func TestCopyFilesRunsNoFsmonitorOfTheRepository(t *testing.T) {
	main, wt, _ := newWorktree(t)
	testenv.WriteFile(t, filepath.Join(main, ".env"), "KEY=1\n")
	ran := filepath.Join(t.TempDir(), "ran")
	monitor := filepath.Join(t.TempDir(), "fsmonitor.sh")
	testenv.WriteFile(t, monitor, "#!/bin/sh\ntouch "+ran+"\nexit 1\n")
	if err := os.Chmod(monitor, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, main, "config", "core.fsmonitor", monitor)
	rep, err := CopyFiles(context.Background(), main, wt, []string{".env"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Copied, []string{".env"}) {
		t.Errorf("report %+v, want .env copied", rep)
	}
	if testenv.Exists(ran) {
		t.Error("the repository's core.fsmonitor ran during the copy")
	}
	// The control: a plain git runs it.
	testenv.Git(t, main, "ls-files", "--others")
	if !testenv.Exists(ran) {
		t.Error("plain git ran no fsmonitor either: this test shows nothing")
	}
}
