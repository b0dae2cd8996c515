package workspace

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// landFixture is a project whose main checkout is on main, with a
// workspace "feat" that made two commits of its own while main moved on
// with one that does not conflict.
type landFixture struct {
	m    *Manager
	p    Project
	ws   Workspace
	head string // feat's head
	main string // main's head
}

func newLandFixture(t *testing.T) *landFixture {
	t.Helper()
	m, p := setup(t)
	f := &landFixture{m: m, p: p, ws: create(t, m, p, "feat")}
	testenv.CommitFile(t, f.ws.Path, "feature.txt", "the feature\n", "add the feature")
	f.head = commitAs(t, f.ws.Path, "docs.txt", "its docs\n", "document the feature", "Agent Smith", "agent@example.com")
	f.main = testenv.CommitFile(t, p.Path, "other.txt", "work on main\n", "main moves on")
	return f
}

// commitAs commits a file with another author, dated in the past.
func commitAs(t *testing.T, dir, name, content, msg, author, email string) string {
	t.Helper()
	testenv.WriteFile(t, filepath.Join(dir, name), content)
	testenv.Git(t, dir, "add", "--", name)
	cmd := exec.Command("git", "commit", "-q", "-m", msg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+author, "GIT_AUTHOR_EMAIL="+email, "GIT_AUTHOR_DATE=@1500000000 +0200")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	return testenv.Git(t, dir, "rev-parse", "HEAD")
}

func (f *landFixture) rev(t *testing.T, rev string) string {
	t.Helper()
	return testenv.Git(t, f.p.Path, "rev-parse", rev)
}

// refs lists every ref of the project with its value.
func refs(t *testing.T, repo string) string {
	t.Helper()
	return testenv.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
}

// snapshot is a worktree as files (.git left out), its status and its
// HEAD: what "left exactly as it was" compares.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[path] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files["<status>"] = testenv.Git(t, dir, "status", "--porcelain=v1", "--untracked-files=all")
	files["<head>"] = testenv.Git(t, dir, "rev-parse", "HEAD")
	files["<branch>"] = testenv.Git(t, dir, "symbolic-ref", "HEAD")
	return files
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s changed: %q, was %q", what, k, after[k], v)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

func TestMergeLandsEachStrategyAndTheMainCheckoutMovesWithTheTarget(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{StrategyMerge, StrategySquash, StrategyRebase} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			f := newLandFixture(t)
			ev := record(t, f.m)
			pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			if !pf.CanMerge || pf.Target != "main" || pf.Branch != "feat" || pf.Ahead != 2 || pf.Behind != 1 || pf.CheckedOutAt != f.p.Path ||
				pf.TargetHead != f.main || pf.Head != f.head || pf.Strategy != s || len(pf.Conflicts)+len(pf.TargetDirty)+len(pf.Blockers) != 0 {
				t.Fatalf("preflight %+v", pf)
			}
			res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			mainNow := f.rev(t, "main")
			if !res.Merged || !res.Verified || res.TargetHead != mainNow || mainNow == f.main {
				t.Fatalf("result %+v, main at %s", res, mainNow)
			}
			// The user's checkout moved with its branch: the workspace's
			// files are there, and nothing shows as changed.
			for name, want := range map[string]string{"feature.txt": "the feature\n", "docs.txt": "its docs\n", "other.txt": "work on main\n", "README.md": "hello\n"} {
				if b, err := os.ReadFile(filepath.Join(f.p.Path, name)); err != nil || string(b) != want {
					t.Errorf("main checkout's %s = %q, %v", name, b, err)
				}
			}
			if st := testenv.Git(t, f.p.Path, "status", "--porcelain"); st != "" {
				t.Errorf("the main checkout shows changes after the merge: %q", st)
			}
			parents := strings.Fields(testenv.Git(t, f.p.Path, "log", "-1", "--format=%P", "main"))
			switch s {
			case StrategyMerge:
				if !slices.Equal(parents, []string{f.main, f.head}) || f.rev(t, "feat") != f.head {
					t.Errorf("merge commit's parents %v, want main then feat; feat at %s", parents, f.rev(t, "feat"))
				}
				if msg := testenv.Git(t, f.p.Path, "log", "-1", "--format=%s", "main"); msg != "Merge branch 'feat' into main" {
					t.Errorf("message %q", msg)
				}
			case StrategySquash:
				if !slices.Equal(parents, []string{f.main}) || f.rev(t, "feat") != f.head {
					t.Errorf("squash commit's parents %v, want main's old head", parents)
				}
				msg := testenv.Git(t, f.p.Path, "log", "-1", "--format=%B", "main")
				if !strings.Contains(msg, "* add the feature\n* document the feature") {
					t.Errorf("squash message lists no commits:\n%s", msg)
				}
			case StrategyRebase:
				if f.rev(t, "feat") != mainNow || testenv.Git(t, f.ws.Path, "rev-parse", "HEAD") != mainNow {
					t.Errorf("feat at %s, main at %s: the workspace's branch must be the replayed one", f.rev(t, "feat"), mainNow)
				}
				log := testenv.Git(t, f.p.Path, "log", "--format=%s|%an|%ae|%at|%cn", f.main+"..main")
				want := "document the feature|Agent Smith|agent@example.com|1500000000|Test Committer\nadd the feature|Test Author|author@example.com|"
				if !strings.HasPrefix(log, want) {
					t.Errorf("replayed commits:\n%s\nwant the authors, dates and messages kept:\n%s", log, want)
				}
				if st := testenv.Git(t, f.ws.Path, "status", "--porcelain"); st != "" {
					t.Errorf("the workspace shows changes after the rebase: %q", st)
				}
			}
			ev.waitFor(t, soon, "status-changed of the workspace", func(e Event) bool {
				return e.Kind == EventStatusChanged && e.Workspace.Path == f.ws.Path
			})
		})
	}
}

func TestMergeFastForwardsWhenTheTargetDidNotMove(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "feat")
	head := testenv.CommitFile(t, ws.Path, "feature.txt", "x\n", "feature")
	res, err := m.Merge(context.Background(), ws.Path, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := testenv.Git(t, p.Path, "rev-parse", "main"); got != head || !res.Merged || !res.Verified {
		t.Fatalf("main at %s, want feat's head %s; %+v", got, head, res)
	}
	// A second merge has nothing to do, and says the work is there.
	res, err = m.Merge(context.Background(), ws.Path, MergeOptions{})
	if err != nil || res.Merged || !res.Verified || !res.Preflight.UpToDate {
		t.Fatalf("second merge: %+v, %v", res, err)
	}
}

func TestMergeIntoABranchNoWorktreeHasMovesOnlyTheRef(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	testenv.Git(t, f.p.Path, "branch", "release", f.main)
	before := snapshot(t, f.p.Path)
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Target: "release"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Preflight.CheckedOutAt != "" || !res.Verified || f.rev(t, "release") == f.main || f.rev(t, "main") != f.main {
		t.Fatalf("%+v; release %s, main %s", res, f.rev(t, "release"), f.rev(t, "main"))
	}
	sameSnapshot(t, "the main checkout", before, snapshot(t, f.p.Path))
}

func TestMergeIntoABranchAnotherWorkspaceHasMovesThatCheckout(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	other := create(t, f.m, f.p, "integration")
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Target: "integration", Strategy: StrategySquash})
	if err != nil {
		t.Fatal(err)
	}
	if res.Preflight.CheckedOutAt != other.Path || !res.Verified {
		t.Fatalf("%+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(other.Path, "feature.txt")); err != nil || string(b) != "the feature\n" {
		t.Fatalf("the other workspace's checkout did not move: %q %v", b, err)
	}
	if st := testenv.Git(t, other.Path, "status", "--porcelain"); st != "" {
		t.Errorf("status %q", st)
	}
}

func TestMergeRefusesATargetCheckedOutWithChangesAndMovesNothing(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	testenv.WriteFile(t, filepath.Join(f.p.Path, "README.md"), "the user's edit\n")
	// Untracked files there do not block: git would not overwrite them.
	testenv.WriteFile(t, filepath.Join(f.p.Path, "notes.txt"), "the user's notes\n")
	pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pf.CanMerge || pf.CheckedOutAt != f.p.Path || !slices.Equal(pf.TargetDirty, []string{"README.md"}) || len(pf.Blockers) != 1 {
		t.Fatalf("preflight %+v", pf)
	}
	beforeRefs, before := refs(t, f.p.Path), snapshot(t, f.p.Path)
	_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "README.md") || !strings.Contains(err.Error(), f.p.Path) {
		t.Errorf("the refusal does not name the file and the checkout: %v", err)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
	sameSnapshot(t, "the main checkout", before, snapshot(t, f.p.Path))
}

func TestMergeRefusesUntrackedFilesTheMergeWouldOverwriteInTheTargetsCheckout(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	testenv.WriteFile(t, filepath.Join(f.p.Path, "feature.txt"), "the user's own\n")
	beforeRefs, before := refs(t, f.p.Path), snapshot(t, f.p.Path)
	_, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "feature.txt") {
		t.Errorf("%v", err)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
	sameSnapshot(t, "the main checkout", before, snapshot(t, f.p.Path))
}

func TestMergeRefusesUncommittedWorkNamingTheFiles(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "feature.txt"), "changed, not committed\n")
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "new.txt"), "untracked\n")
	pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pf.CanMerge || pf.UpToDate || !slices.Equal(pf.Uncommitted, []string{"feature.txt", "new.txt"}) {
		t.Fatalf("preflight %+v", pf)
	}
	beforeRefs := refs(t, f.p.Path)
	_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "feature.txt, new.txt") {
		t.Errorf("%v", err)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
}

func TestPreflightNamesConflictsAndTouchesNothing(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{StrategyMerge, StrategySquash, StrategyRebase} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			f := newLandFixture(t)
			testenv.CommitFile(t, f.ws.Path, "README.md", "the agent's readme\n", "agent edits the readme")
			testenv.CommitFile(t, f.p.Path, "README.md", "the user's readme\n", "user edits the readme")
			beforeRefs, before, beforeWs := refs(t, f.p.Path), snapshot(t, f.p.Path), snapshot(t, f.ws.Path)
			pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			if pf.CanMerge || !slices.Equal(pf.Conflicts, []string{"README.md"}) || len(pf.Blockers) != 1 || !strings.Contains(pf.Blockers[0], "README.md") {
				t.Fatalf("preflight %+v", pf)
			}
			_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: s})
			wantCode(t, err, CodeConflict)
			if !strings.Contains(err.Error(), "README.md") {
				t.Errorf("%v", err)
			}
			if refs(t, f.p.Path) != beforeRefs {
				t.Error("a ref moved")
			}
			sameSnapshot(t, "the main checkout", before, snapshot(t, f.p.Path))
			sameSnapshot(t, "the workspace", beforeWs, snapshot(t, f.ws.Path))
		})
	}
}

func TestMergeRefusesItsOwnBranchAnUnknownTargetADetachedHeadAndAnUnknownStrategy(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	for name, o := range map[string]MergeOptions{
		"own branch":       {Target: "feat"},
		"unknown target":   {Target: "nope"},
		"option-like":      {Target: "-x"},
		"unknown strategy": {Strategy: "octopus"},
	} {
		if _, err := f.m.Preflight(context.Background(), f.ws.Path, o); CodeOf(err) != CodeInvalidInput {
			t.Errorf("%s: %v, want invalid-input", name, err)
		}
		if _, err := f.m.Merge(context.Background(), f.ws.Path, o); CodeOf(err) != CodeInvalidInput {
			t.Errorf("merge, %s: %v, want invalid-input", name, err)
		}
	}
	testenv.Git(t, f.ws.Path, "checkout", "-q", "--detach")
	_, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeInvalidInput)
	if !strings.Contains(err.Error(), "detached") {
		t.Errorf("%v", err)
	}
}

func TestMergeWithoutAConfiguredIdentityMakesNoCommitAndSaysHowToSetOne(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	f.m.git.environ = func() []string {
		return slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, "GIT_AUTHOR_") || strings.HasPrefix(kv, "GIT_COMMITTER_") || strings.HasPrefix(kv, "EMAIL=")
		})
	}
	beforeRefs := refs(t, f.p.Path)
	_, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeInvalidInput)
	if !strings.Contains(err.Error(), "user.email") {
		t.Errorf("%v", err)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
	testenv.Git(t, f.p.Path, "config", "user.name", "Repo User")
	testenv.Git(t, f.p.Path, "config", "user.email", "repo@example.com")
	if _, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if who := testenv.Git(t, f.p.Path, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "main"); who != "Repo User <repo@example.com>|Repo User <repo@example.com>" {
		t.Errorf("merge commit by %q, want the repository's identity", who)
	}
}

func TestRebaseDropsCommitsWhoseChangeTheTargetHasAlready(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "feat")
	testenv.CommitFile(t, ws.Path, "a.txt", "a\n", "add a")               // picked onto main as it is: dropped by patch
	testenv.CommitFile(t, ws.Path, "b.txt", "b\n", "add b")               // main has it with more: empty once replayed
	testenv.CommitFile(t, ws.Path, "c.txt", "c\n", "add c, the new work") // kept
	testenv.CommitFile(t, p.Path, "a.txt", "a\n", "add a on main")
	testenv.WriteFile(t, filepath.Join(p.Path, "b.txt"), "b\n")
	testenv.Git(t, p.Path, "add", "b.txt")
	testenv.CommitFile(t, p.Path, "z.txt", "z\n", "add b and z on main")
	mainBefore := testenv.Git(t, p.Path, "rev-parse", "main")
	res, err := m.Merge(context.Background(), ws.Path, MergeOptions{Strategy: StrategyRebase})
	if err != nil {
		t.Fatal(err)
	}
	if log := testenv.Git(t, p.Path, "log", "--format=%s", mainBefore+"..main"); log != "add c, the new work" || !res.Verified {
		t.Fatalf("replayed: %q (want only the commit with new work); %+v", log, res)
	}
}

func TestAMergeReservesTheWorkspaceAgainstADeleteAndASecondMerge(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	f.m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if slices.Contains(arg, "merge-tree") {
			select {
			case entered <- struct{}{}:
				<-gate
			default:
			}
		}
		return exec.CommandContext(ctx, name, arg...)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
		done <- err
	}()
	<-entered
	err := f.m.Delete(context.Background(), f.ws.Path, DeleteOptions{})
	wantCode(t, err, CodeConflict)
	_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeConflict)
	_, err = f.m.UpdateFromBase(context.Background(), f.ws.Path, UpdateMerge)
	wantCode(t, err, CodeConflict)
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Resolve(f.ws.Path); err != nil {
		t.Fatalf("the workspace went: %v", err)
	}
}

func TestUpdateFromBaseRebasesOrMergesTheBaseIn(t *testing.T) {
	t.Parallel()
	for _, mode := range []UpdateMode{UpdateRebase, UpdateMerge} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			f := newLandFixture(t)
			mainBefore := refs(t, f.p.Path)
			res, err := f.m.UpdateFromBase(context.Background(), f.ws.Path, mode)
			if err != nil {
				t.Fatal(err)
			}
			head := testenv.Git(t, f.ws.Path, "rev-parse", "HEAD")
			if !res.Updated || res.OldHead != f.head || res.NewHead != head || res.Base != "main" || f.rev(t, "feat") != head {
				t.Fatalf("%+v, head %s", res, head)
			}
			if b, err := os.ReadFile(filepath.Join(f.ws.Path, "other.txt")); err != nil || string(b) != "work on main\n" {
				t.Errorf("the base's file is not in the workspace: %q %v", b, err)
			}
			if st := testenv.Git(t, f.ws.Path, "status", "--porcelain"); st != "" {
				t.Errorf("status %q", st)
			}
			if f.rev(t, "main") != f.main {
				t.Errorf("the base moved: %s", mainBefore)
			}
			parents := strings.Fields(testenv.Git(t, f.ws.Path, "log", "-1", "--format=%P"))
			if mode == UpdateMerge && !slices.Equal(parents, []string{f.head, f.main}) {
				t.Errorf("merge parents %v", parents)
			}
			if mode == UpdateRebase {
				if mb := testenv.Git(t, f.ws.Path, "merge-base", "HEAD", "main"); mb != f.main {
					t.Errorf("merge-base %s, want main's head: the commits are replayed onto it", mb)
				}
				if n := testenv.Git(t, f.ws.Path, "rev-list", "--count", "main..HEAD"); n != "2" {
					t.Errorf("%s commits on the base, want 2", n)
				}
			}
			again, err := f.m.UpdateFromBase(context.Background(), f.ws.Path, mode)
			if err != nil || again.Updated || again.NewHead != head {
				t.Errorf("second update %+v %v", again, err)
			}
		})
	}
}

func TestUpdateFromBaseConflictOrUncommittedWorkLeavesTheWorkspaceExactlyAsItWas(t *testing.T) {
	t.Parallel()
	for _, mode := range []UpdateMode{UpdateRebase, UpdateMerge} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			f := newLandFixture(t)
			testenv.CommitFile(t, f.ws.Path, "README.md", "the agent's readme\n", "agent edits the readme")
			testenv.CommitFile(t, f.p.Path, "README.md", "the user's readme\n", "user edits the readme")
			beforeRefs, before := refs(t, f.p.Path), snapshot(t, f.ws.Path)
			_, err := f.m.UpdateFromBase(context.Background(), f.ws.Path, mode)
			wantCode(t, err, CodeConflict)
			if !strings.Contains(err.Error(), "README.md") {
				t.Errorf("%v", err)
			}
			if refs(t, f.p.Path) != beforeRefs {
				t.Error("a ref moved")
			}
			sameSnapshot(t, "the workspace", before, snapshot(t, f.ws.Path))

			testenv.WriteFile(t, filepath.Join(f.ws.Path, "wip.txt"), "work in progress\n")
			before = snapshot(t, f.ws.Path)
			_, err = f.m.UpdateFromBase(context.Background(), f.ws.Path, mode)
			wantCode(t, err, CodeConflict)
			if !strings.Contains(err.Error(), "wip.txt") {
				t.Errorf("%v", err)
			}
			sameSnapshot(t, "the workspace", before, snapshot(t, f.ws.Path))
		})
	}
}

func TestChangedFilesCountsCommittedUncommittedAndUntrackedFilesOnce(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "feature.txt"), "changed again\n") // committed and changed: once
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "dir", "a.txt"), "untracked\n")
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "dir", "b.txt"), "untracked\n")
	n, err := f.m.ChangedFiles(context.Background(), f.ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.m.Diff(context.Background(), f.ws.Path, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || n != len(d.Files) {
		t.Fatalf("ChangedFiles = %d, Diff lists %d (%+v); want 4: feature.txt, docs.txt, dir/a.txt, dir/b.txt", n, len(d.Files), d.Files)
	}
}

func TestAMergeIsNotVerifiedWhenTheWorkspaceCommittedMoreMeanwhile(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	committed := false
	f.m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if !committed && slices.Contains(arg, "--ff-only") {
			// The agent commits while the main checkout moves.
			committed = true
			testenv.CommitFile(t, f.ws.Path, "late.txt", "late\n", "a late commit")
		}
		return exec.CommandContext(ctx, name, arg...)
	}
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !committed || !res.Merged || res.Verified {
		t.Fatalf("%+v: a workspace with a commit the target lacks must not be verified", res)
	}
}

// TestAWorkspaceOfACloneMergesIntoTheLocalBranchOfItsRemoteBase: in a
// clone, a new workspace's base is origin/main; its merge lands in the
// local main (which the user pushes from), checked out in the clone and
// moving with it. Without a local main, the refusal says how to make one.
func TestAWorkspaceOfACloneMergesIntoTheLocalBranchOfItsRemoteBase(t *testing.T) {
	origin := testenv.GitRepo(t, "origin")
	clone := filepath.Join(realDir(t), "clone")
	testenv.Git(t, "", "clone", "-q", origin, clone)
	m, _ := newManager(t, Options{})
	ctx := context.Background()
	p, err := m.AddProject(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	ws := create(t, m, p, "feat")
	if st, err := m.Status(ctx, ws.Path); err != nil || st.Base != "origin/main" {
		t.Fatalf("the clone's workspace has base %q (%v), want origin/main", st.Base, err)
	}
	head := testenv.CommitFile(t, ws.Path, "feature.txt", "the feature\n", "add the feature")

	pf, err := m.Preflight(ctx, ws.Path, MergeOptions{})
	if err != nil || pf.Target != "main" || !pf.CanMerge || pf.CheckedOutAt != clone {
		t.Fatalf("preflight = %+v, %v; want main, checked out in the clone, mergeable", pf, err)
	}
	res, err := m.Merge(ctx, ws.Path, MergeOptions{})
	if err != nil || !res.Verified || testenv.Git(t, clone, "rev-parse", "main") != head {
		t.Fatalf("merge = %+v, %v; want main fast-forwarded to the workspace's head", res, err)
	}
	if _, err := os.Stat(filepath.Join(clone, "feature.txt")); err != nil {
		t.Errorf("the clone's checkout did not move with main: %v", err)
	}

	testenv.Git(t, clone, "checkout", "-q", "--detach")
	testenv.Git(t, clone, "branch", "-q", "-D", "main")
	_, err = m.Preflight(ctx, ws.Path, MergeOptions{})
	if CodeOf(err) != CodeInvalidInput || !strings.Contains(err.Error(), "git branch --track main origin/main") {
		t.Errorf("preflight without a local main = %v; want invalid-input saying how to make it", err)
	}
}
