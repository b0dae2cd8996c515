package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"codehydra/internal/testenv"
)

// mergeCommitWithAnEdit makes the workspace merge main in with
// `git merge --no-commit` and change feature.txt in that merge commit,
// then main moves on: a replay of the workspace's commits leaves the
// merge commit, and the edit, out.
func mergeCommitWithAnEdit(t *testing.T, f *landFixture) {
	t.Helper()
	testenv.Git(t, f.ws.Path, "merge", "-q", "--no-commit", "--no-ff", "main")
	testenv.WriteFile(t, filepath.Join(f.ws.Path, "feature.txt"), "changed in the merge commit\n")
	testenv.Git(t, f.ws.Path, "add", "feature.txt")
	testenv.Git(t, f.ws.Path, "commit", "-q", "--no-edit")
	f.head = testenv.Git(t, f.ws.Path, "rev-parse", "HEAD")
	f.main = testenv.CommitFile(t, f.p.Path, "later.txt", "later\n", "main moves on again")
}

func TestARebaseThatWouldDropAChangeMadeInAMergeCommitIsRefused(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	mergeCommitWithAnEdit(t, f)
	beforeRefs, beforeWs := refs(t, f.p.Path), snapshot(t, f.ws.Path)
	pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	if err != nil {
		t.Fatal(err)
	}
	if pf.CanMerge || len(pf.Blockers) != 1 || !strings.Contains(pf.Blockers[0], "merge commits of feat (feature.txt)") {
		t.Fatalf("preflight %+v", pf)
	}
	_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	wantCode(t, err, CodeConflict)
	_, err = f.m.UpdateFromBase(context.Background(), f.ws.Path, UpdateRebase)
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "feature.txt") {
		t.Errorf("%v", err)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
	sameSnapshot(t, "the workspace", beforeWs, snapshot(t, f.ws.Path))
	// A merge keeps the change.
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	if err != nil || !res.Verified {
		t.Fatalf("%+v %v", res, err)
	}
	if got := testenv.Git(t, f.p.Path, "show", "main:feature.txt"); got != "changed in the merge commit" {
		t.Errorf("main's feature.txt %q", got)
	}
}

func TestARebaseIsNotVerifiedWhenTheTargetLacksAChangeOfAMergeCommit(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	mergeCommitWithAnEdit(t, f)
	ws, p, err := f.m.resolve(f.ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := f.m.preflight(context.Background(), ws, p, MergeOptions{Strategy: StrategyRebase})
	if err != nil {
		t.Fatal(err)
	}
	// What the rebase did before the preflight refused it: both branches
	// at the replayed tip, which lacks the merge commit's edit.
	r, err := f.m.replay(context.Background(), f.p.Path, f.main, f.main, f.head, nil)
	if err != nil || r.conflicts != nil {
		t.Fatal(r, err)
	}
	testenv.Git(t, f.p.Path, "update-ref", "refs/heads/feat", r.tip)
	testenv.Git(t, f.p.Path, "update-ref", "refs/heads/main", r.tip)
	moves := []refMove{{Ref: "refs/heads/feat", Old: f.head, New: r.tip}, {Ref: "refs/heads/main", Old: f.main, New: r.tip}}
	ok, err := f.m.verifyLanded(context.Background(), pl, moves, r.tip)
	if err != nil || ok {
		t.Fatalf("verified %v, %v: the target lacks the merge commit's change", ok, err)
	}
}

func TestARebaseKeepsTheBranchsOldHeadUnderARef(t *testing.T) {
	t.Parallel()
	for _, update := range []bool{false, true} {
		f := newLandFixture(t)
		var err error
		if update {
			_, err = f.m.UpdateFromBase(context.Background(), f.ws.Path, UpdateRebase)
		} else {
			_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
		}
		if err != nil {
			t.Fatal(err)
		}
		kept := testenv.Git(t, f.p.Path, "for-each-ref", "--format=%(refname) %(objectname)", "refs/codehydra/rebased/feat/")
		if ref, id, _ := strings.Cut(kept, " "); id != f.head || strings.Contains(id, "\n") || !strings.HasPrefix(ref, "refs/codehydra/rebased/feat/") {
			t.Errorf("update %v: kept %q, want feat's old head %s once", update, kept, f.head)
		}
	}
}

// ignoredSecret gives the workspace an ignored local.env with a secret,
// and makes main start tracking a local.env.
func ignoredSecret(t *testing.T, f *landFixture) string {
	t.Helper()
	f.head = testenv.CommitFile(t, f.ws.Path, ".gitignore", "local.env\n", "ignore local.env")
	secret := filepath.Join(f.ws.Path, "local.env")
	testenv.WriteFile(t, secret, "TOKEN=the user's secret\n")
	f.main = testenv.CommitFile(t, f.p.Path, "local.env", "TOKEN=\n", "track a template local.env")
	return secret
}

func TestAnUpdateRefusesToOverwriteAnIgnoredFile(t *testing.T) {
	t.Parallel()
	for _, mode := range []UpdateMode{UpdateRebase, UpdateMerge} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			f := newLandFixture(t)
			secret := ignoredSecret(t, f)
			beforeRefs, before := refs(t, f.p.Path), snapshot(t, f.ws.Path)
			_, err := f.m.UpdateFromBase(context.Background(), f.ws.Path, mode)
			wantCode(t, err, CodeConflict)
			if !strings.Contains(err.Error(), "local.env") {
				t.Errorf("%v", err)
			}
			if b, _ := os.ReadFile(secret); string(b) != "TOKEN=the user's secret\n" {
				t.Errorf("local.env is now %q", b)
			}
			if refs(t, f.p.Path) != beforeRefs {
				t.Error("a ref moved")
			}
			sameSnapshot(t, "the workspace", before, snapshot(t, f.ws.Path))
		})
	}
}

func TestARebaseMergeRefusesToOverwriteAnIgnoredFileOfTheWorkspace(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	secret := ignoredSecret(t, f)
	beforeRefs := refs(t, f.p.Path)
	_, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	wantCode(t, err, CodeConflict)
	if !strings.Contains(err.Error(), "local.env") || !strings.Contains(err.Error(), f.ws.Path) {
		t.Errorf("%v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOKEN=the user's secret\n" {
		t.Errorf("local.env is now %q", b)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
}

func TestLoadDoesNotFinishAMoveOverAnIgnoredFile(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	secret := ignoredSecret(t, f)
	commonDir := filepath.Join(f.p.Path, ".git")
	if err := writeLandJournal(commonDir, landJournal{Workspace: f.ws.Path, Moves: []refMove{{Ref: "refs/heads/feat", Old: f.head, New: f.main}}}); err != nil {
		t.Fatal(err)
	}
	relaunched := NewManager(Options{Projects: []string{f.p.Path}, WorktreeRoot: filepath.Dir(filepath.Dir(filepath.Dir(f.ws.Path)))})
	if err := relaunched.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "TOKEN=the user's secret\n" {
		t.Errorf("local.env is now %q", b)
	}
	if got := f.rev(t, "feat"); got != f.head {
		t.Errorf("feat moved to %s", got)
	}
}

func TestATargetBeingRebasedInItsCheckoutIsBusy(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	// main's own commit adds other.txt; side adds it too, otherwise.
	testenv.Git(t, f.p.Path, "branch", "side", f.main+"~1")
	side := create(t, f.m, f.p, "side")
	testenv.CommitFile(t, side.Path, "other.txt", "side's\n", "side adds other.txt")
	cmd := exec.Command("git", "rebase", "side")
	cmd.Dir = f.p.Path
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the rebase did not stop on its conflict:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(f.p.Path, ".git", "rebase-merge", "head-name")); err != nil {
		t.Fatalf("no rebase in progress: %v", err)
	}
	beforeRefs := refs(t, f.p.Path)
	pf, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "main is being rebased at " + f.p.Path + "; finish or abort it first"
	if pf.CanMerge || pf.CheckedOutAt != f.p.Path || !slices.Contains(pf.Blockers, want) {
		t.Fatalf("preflight %+v", pf)
	}
	_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{})
	wantCode(t, err, CodeConflict)
	if refs(t, f.p.Path) != beforeRefs || f.rev(t, "main") != f.main {
		t.Error("a ref moved")
	}
}

func TestATargetMustNameABranchExactly(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	// A symbolic ref to main resolves, yet no worktree has it checked
	// out: it would move main under the main checkout, as "Main" does
	// on a case-insensitive file system.
	testenv.Git(t, f.p.Path, "symbolic-ref", "refs/heads/trunk", "refs/heads/main")
	beforeRefs := refs(t, f.p.Path)
	for target, says := range map[string]string{"trunk": "symbolic ref to main", "Main": "did you mean main?", "MAIN": "did you mean main?"} {
		_, err := f.m.Preflight(context.Background(), f.ws.Path, MergeOptions{Target: target})
		wantCode(t, err, CodeInvalidInput)
		if !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v", target, err)
		}
		_, err = f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Target: target})
		wantCode(t, err, CodeInvalidInput)
	}
	if refs(t, f.p.Path) != beforeRefs {
		t.Error("a ref moved")
	}
}

func TestACommitMadeWhileTheBranchMovesIsKeptAndNamed(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	late := ""
	f.m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if late == "" && slices.Contains(arg, "--keep") {
			// The agent commits between the check of the head and the move.
			late = testenv.CommitFile(t, f.ws.Path, "late.txt", "late\n", "a late commit")
		}
		return exec.CommandContext(ctx, name, arg...)
	}
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	wantCode(t, err, CodeConflict)
	if late == "" || res.Verified || !strings.Contains(err.Error(), late) {
		t.Fatalf("%+v, %v: want the late commit %s named", res, err, late)
	}
	kept := testenv.Git(t, f.p.Path, "for-each-ref", "--format=%(objectname)", "refs/codehydra/overtaken/feat/")
	if kept != late || !strings.Contains(err.Error(), "refs/codehydra/overtaken/feat/") {
		t.Errorf("kept %q, want %s; %v", kept, late, err)
	}
	if f.rev(t, "main") != f.main {
		t.Error("main moved after the late commit was found")
	}
}

func TestARebaseOfAWorkspaceThatMergedItsBaseInCleanlyGoesAhead(t *testing.T) {
	t.Parallel()
	f := newLandFixture(t)
	if _, err := f.m.UpdateFromBase(context.Background(), f.ws.Path, UpdateMerge); err != nil {
		t.Fatal(err)
	}
	testenv.CommitFile(t, f.ws.Path, "more.txt", "more\n", "more work after the merge")
	testenv.CommitFile(t, f.p.Path, "later.txt", "later\n", "main moves on again")
	res, err := f.m.Merge(context.Background(), f.ws.Path, MergeOptions{Strategy: StrategyRebase})
	if err != nil || !res.Verified {
		t.Fatalf("%+v %v: a merge commit with no change of its own drops nothing", res, err)
	}
}
