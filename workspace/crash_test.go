//go:build unix

package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// A delete killed at any moment — the app crashes, or is killed — must be
// finished by the next launch (or, where the worktree is still there, by a
// second delete), and must never touch anything outside the worktree. The
// delete runs in a separate process (this test binary, re-run as a helper)
// so that the kill is real.

// killedDeleteEnv makes TestHelperDeleteProcess run a delete as a helper.
const killedDeleteEnv = "CODEHYDRA_TEST_KILLED_DELETE"

// deleteSpec tells the helper what to delete and where to stop.
type deleteSpec struct {
	Repo, Root, Path string
	KeepBranch       bool
	// Point is where the helper stops and waits to be killed: "stop-agent",
	// "before:<git args>" / "after:<git args>" of a git command the delete
	// runs, or "step:<step>" of the worktree's removal (see deleteStep);
	// "" runs the delete to its end.
	Point string
	// Mark is a file the helper creates when it reached Point (or, without
	// one, when the delete starts).
	Mark string
	// KillAfter, when set, makes the helper kill itself (SIGKILL, the
	// process alone) that long after its delete started.
	KillAfter time.Duration
}

// TestHelperDeleteProcess is not a test: it is the process that a
// crash test kills in the middle of a delete.
func TestHelperDeleteProcess(t *testing.T) {
	raw := os.Getenv(killedDeleteEnv)
	if raw == "" {
		t.Skip("helper process for the crash tests")
	}
	var spec deleteSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	mark := func() {
		if err := os.WriteFile(spec.Mark, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	m := NewManager(Options{Projects: []string{spec.Repo}, WorktreeRoot: spec.Root, Agents: &blockingAgents{point: spec.Point == "stop-agent", mark: mark}})
	when, gitArgs, _ := strings.Cut(spec.Point, ":")
	if when == "step" {
		// A step of the worktree's removal, which runs no git.
		step := gitArgs
		gitArgs = ""
		m.deleteStep = func(s, _ string) {
			if s == step {
				mark()
				select {}
			}
		}
	}
	m.git.command = hangAtGit(when, gitArgs, spec.Mark)
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spec.Point == "" {
		mark()
	}
	if spec.KillAfter > 0 {
		// Timed from inside, so that no latency of noticing the start
		// pushes the kill past the end of a delete of a few milliseconds.
		time.AfterFunc(spec.KillAfter, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	}
	start := time.Now()
	err := m.Delete(context.Background(), spec.Path, DeleteOptions{KeepBranch: spec.KeepBranch})
	took := time.Since(start)
	fmt.Println("delete returned:", err)
	fmt.Printf("%s%d\n", deleteTookPrefix, took.Nanoseconds())
}

// hangAtGit is a git runner's command that runs git, but for the first
// command whose arguments start with gitArgs ("" for none): that one runs
// only when is "after", then mark is created and it hangs until killed.
func hangAtGit(when, gitArgs, mark string) func(ctx context.Context, name string, arg ...string) *exec.Cmd {
	return func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if gitArgs == "" || !strings.HasPrefix(strings.Join(arg, " "), gitArgs) {
			return exec.CommandContext(ctx, name, arg...)
		}
		// (The git runner sets the environment, so the mark goes in the
		// script; temp paths hold no quote.)
		script := `touch '` + mark + `'; exec sleep 3600`
		if when == "after" {
			script = `"$0" "$@" || exit; ` + script
		}
		return exec.CommandContext(ctx, "sh", append([]string{"-c", script, name}, arg...)...)
	}
}

// deleteTookPrefix starts the helper's line that says how long its
// delete took, in nanoseconds.
const deleteTookPrefix = "delete took ns: "

// blockingAgents stops no agent; at the stop-agent point it hangs.
type blockingAgents struct {
	point bool
	mark  func()
}

func (a *blockingAgents) AgentStatus(string) AgentStatus { return NoAgent }

func (a *blockingAgents) StopAgent(ctx context.Context, _ string) error {
	if a.point {
		a.mark()
		<-ctx.Done()
	}
	return nil
}

// crashFixture is a project with the workspace to delete, a sibling
// workspace, and files outside that the delete must not touch.
type crashFixture struct {
	repo, root  string
	target      Workspace
	sibling     Workspace
	outsideFile string
	branches    string // git branch list before the delete, target excluded
}

func newCrashFixture(t *testing.T) *crashFixture {
	t.Helper()
	f := &crashFixture{repo: testenv.GitRepo(t, "project"), root: filepath.Join(realDir(t), "worktrees")}
	m := NewManager(Options{Projects: []string{f.repo}, WorktreeRoot: f.root})
	ctx := context.Background()
	if err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	p := Project{Path: f.repo}
	f.target, f.sibling = create(t, m, p, "target"), create(t, m, p, "target-sibling")
	for _, ws := range []Workspace{f.target, f.sibling} {
		v := "note of " + ws.Name
		if err := m.SetMetadata(ctx, ws.Path, "note", &v); err != nil {
			t.Fatal(err)
		}
	}
	testenv.CommitFile(t, f.target.Path, "work.txt", "committed work\n", "work")
	testenv.WriteFile(t, filepath.Join(f.target.Path, "untracked", "deep", "file.txt"), "untracked")
	outside := realDir(t)
	f.outsideFile = filepath.Join(outside, "precious.txt")
	testenv.WriteFile(t, f.outsideFile, "keep me")
	for link, to := range map[string]string{"link-dir": outside, "link-file": f.outsideFile, "link-project": f.repo, "link-sibling": f.sibling.Path} {
		if err := os.Symlink(to, filepath.Join(f.target.Path, link)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WriteFile(t, filepath.Join(f.sibling.Path, "sibling-work.txt"), "uncommitted in the sibling")
	f.branches = branchesBut(testenv.Git(t, f.repo, "branch", "--format=%(refname:short)"), "target")
	return f
}

// startHelper starts the helper process with spec (its mark in a new
// temp folder) in a process group of its own.
func startHelper(t *testing.T, spec *deleteSpec) (*exec.Cmd, *testenv.SyncBuffer) {
	t.Helper()
	spec.Mark = filepath.Join(t.TempDir(), "mark")
	return startHelperTest(t, "TestHelperDeleteProcess", killedDeleteEnv, spec)
}

// startHelperTest starts this test binary running only the test named
// helper, with spec in the variable env, in a process group of its own.
func startHelperTest(t *testing.T, helper, env string, spec any) (*exec.Cmd, *testenv.SyncBuffer) {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), env+"="+string(raw), "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever the test's end, nothing of the helper outlives it.
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, out
}

// killDuring runs the helper with spec, waits until it reached its point,
// kills it with SIGKILL, and waits until every process it started has
// ended, as after a real crash.
func killDuring(t *testing.T, spec deleteSpec) {
	t.Helper()
	cmd, out := startHelper(t, &spec)
	killAtMark(t, cmd, out, spec.Point, spec.Mark)
}

// killAtMark waits until the helper cmd created the file mark (at its
// point), kills its process group, and waits until every process of it
// has ended.
func killAtMark(t *testing.T, cmd *exec.Cmd, out *testenv.SyncBuffer, point, mark string) {
	t.Helper()
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	testenv.WaitFor(t, fmt.Sprintf("the helper to reach %q", point), 20*time.Second, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("helper ended before reaching %q: %v\n%s", point, err, out)
		default:
		}
		return exists(mark)
	})
	// The helper's stand-in commands hang; the group goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	waitGroupGone(t, pgid)
}

// killAfter runs the helper's delete with spec and has the helper kill
// itself after d: only the app dies, a git command it started runs to its
// end, as after a real crash. It returns once every process it started has
// ended, with what the helper printed.
func killAfter(t *testing.T, spec deleteSpec, d time.Duration) (output string) {
	t.Helper()
	spec.KillAfter = d
	cmd, out := startHelper(t, &spec)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the helper neither finished nor was killed\n%s", out)
	}
	waitGroupGone(t, cmd.Process.Pid)
	return out.String()
}

// waitGroupGone waits until no process of the group pgid is left.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	testenv.WaitFor(t, "the processes of the killed helper to end", 20*time.Second, func() bool {
		return syscall.Kill(-pgid, 0) != nil
	})
}

// relaunch is the next launch of the app: a new manager that loads the
// project (and so finishes what it can).
func (f *crashFixture) relaunch(t *testing.T) (*Manager, time.Duration) {
	t.Helper()
	m := NewManager(Options{Projects: []string{f.repo}, WorktreeRoot: f.root})
	start := time.Now()
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, time.Since(start)
}

// checkDeleted checks that the target is gone — folder, registration,
// branch and metadata (unless the branch is kept), delete record — and
// that nothing else changed.
func (f *crashFixture) checkDeleted(t *testing.T, m *Manager, keepBranch bool) {
	t.Helper()
	for _, l := range f.leftovers(t, keepBranch) {
		t.Error(l)
	}
	if _, err := m.Resolve(f.target.Path); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("the target still resolves: %v", err)
	}
	if err := m.Delete(context.Background(), f.target.Path, DeleteOptions{}); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("a delete after the end: %v, want workspace-not-found", err)
	}
	f.checkUntouched(t, m, keepBranch)
}

// leftovers lists what is left of the target: its folder, its
// registration, its branch and metadata (or, when the branch is kept, its
// metadata lost), its delete record.
func (f *crashFixture) leftovers(t *testing.T, keepBranch bool) []string {
	t.Helper()
	var left []string
	if exists(f.target.Path) {
		left = append(left, "the target's folder is still there")
	}
	if exists(stagedFolder(f.target.Path)) {
		left = append(left, "the target's folder is still there, set aside")
	}
	if list := testenv.Git(t, f.repo, "worktree", "list", "--porcelain"); strings.Contains(list, f.target.Path+"\n") {
		left = append(left, "git still lists the target:\n"+list)
	}
	if got := branchOK(t, f.repo, "target"); got != keepBranch {
		left = append(left, fmt.Sprintf("branch target exists = %v, want %v", got, keepBranch))
	}
	if has := f.hasMetadata(t); has != keepBranch {
		left = append(left, fmt.Sprintf("the target's metadata is there = %v, want %v (with the branch)", has, keepBranch))
	}
	if recs, err := readPending(filepath.Join(f.repo, ".git")); err != nil || len(recs) != 0 {
		left = append(left, fmt.Sprintf("delete records left: %+v, %v", recs, err))
	}
	return left
}

// checkUntouched checks everything outside the target's worktree.
func (f *crashFixture) checkUntouched(t *testing.T, m *Manager, keptTarget bool) {
	t.Helper()
	for path, want := range map[string]string{
		f.outsideFile: "keep me",
		filepath.Join(f.sibling.Path, "sibling-work.txt"): "uncommitted in the sibling",
		filepath.Join(f.repo, "README.md"):                "hello\n",
	} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
	if got := testenv.Git(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("the main checkout changed: %q", got)
	}
	if got := testenv.Git(t, f.sibling.Path, "status", "--porcelain"); got != "?? sibling-work.txt" {
		t.Errorf("the sibling's status changed: %q", got)
	}
	if got := testenv.Git(t, f.repo, "config", "--get", "branch.target-sibling.codehydra.note"); got != "note of target-sibling" {
		t.Errorf("the sibling's metadata = %q", got)
	}
	branches := testenv.Git(t, f.repo, "branch", "--format=%(refname:short)")
	if keptTarget {
		branches = branchesBut(branches, "target")
	}
	if branches != f.branches {
		t.Errorf("branches = %q, want %q", branches, f.branches)
	}
	if _, err := m.Resolve(f.sibling.Path); err != nil {
		t.Errorf("the sibling does not resolve: %v", err)
	}
	if out, err := testenv.GitErr(f.repo, "fsck", "--no-progress"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// branchesBut is a branch list (one per line) without branch.
func branchesBut(list, branch string) string {
	return strings.Join(slices.DeleteFunc(strings.Split(list, "\n"), func(b string) bool { return b == branch }), "\n")
}

func branchOK(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := testenv.GitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

func TestADeleteKilledAtAnyStepIsFinishedByTheNextLaunchOrASecondDelete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		point      string
		keepBranch bool
		// worktreeGone: the kill came after the worktree's folder was
		// removed, so the next launch finishes the delete by itself.
		worktreeGone bool
	}{
		{point: "stop-agent"},
		{point: "step:" + stepBeforeRemoval},
		{point: "step:" + stepSetAside, worktreeGone: true},
		{point: "step:" + stepFolderRemoved, worktreeGone: true},
		{point: "step:" + stepAfterRemoval, worktreeGone: true},
		{point: "step:" + stepAfterRemoval, keepBranch: true, worktreeGone: true},
		{point: "before:branch -D", worktreeGone: true},
		{point: "after:branch -D", worktreeGone: true},
		{point: "before:config --local --remove-section", worktreeGone: true},
		{point: "after:config --local --remove-section", worktreeGone: true},
	}
	var failures atomic.Int32
	t.Cleanup(func() {
		t.Logf("FIGURE delete-killed-at-each-step: kill-points=%d failures=%d", len(tests), failures.Load())
	})
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s keepBranch=%v", tt.point, tt.keepBranch), func(t *testing.T) {
			t.Parallel()
			defer func() {
				if t.Failed() {
					failures.Add(1)
				}
			}()
			f := newCrashFixture(t)
			killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, KeepBranch: tt.keepBranch, Point: tt.point})
			f.checkMetadataWhileLeft(t)
			m, _ := f.relaunch(t)
			if tt.worktreeGone {
				f.checkDeleted(t, m, tt.keepBranch)
				return
			}
			// The worktree is still there: the workspace is back, and a
			// second delete finishes the job.
			if _, err := m.Resolve(f.target.Path); err != nil {
				t.Fatalf("after the relaunch the target does not resolve: %v", err)
			}
			f.checkUntouched(t, m, true)
			if err := m.Delete(context.Background(), f.target.Path, DeleteOptions{KeepBranch: tt.keepBranch}); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			f.checkDeleted(t, m, tt.keepBranch)
		})
	}
}

func TestAHalfDoneDeleteThatTheLaunchCannotFinishIsFinishedByASecondDelete(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, Point: "step:" + stepAfterRemoval})
	lock := filepath.Join(f.repo, ".git", "refs", "heads", "target.lock")
	testenv.WriteFile(t, lock, "")
	m, _ := f.relaunch(t)
	if !branchOK(t, f.repo, "target") {
		t.Fatal("the launch deleted a branch whose ref is locked")
	}
	f.checkMetadataWhileLeft(t)
	if recs, _ := readPending(filepath.Join(f.repo, ".git")); len(recs) != 1 {
		t.Fatalf("delete records = %+v, want the unfinished one kept", recs)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), f.target.Path, DeleteOptions{}); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	f.checkDeleted(t, m, false)
}

func TestALaunchLeavesAWorkspaceAloneWhoseBranchIsInUseAgain(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, Point: "step:" + stepAfterRemoval})
	// Before the next launch the user checks the branch out again
	// elsewhere, outside the app.
	again := filepath.Join(realDir(t), "again")
	testenv.Git(t, f.repo, "worktree", "add", again, "target")
	m, _ := f.relaunch(t)
	if !branchOK(t, f.repo, "target") || !exists(filepath.Join(again, "work.txt")) {
		t.Fatal("the launch deleted a branch that is checked out again")
	}
	if recs, _ := readPending(filepath.Join(f.repo, ".git")); len(recs) != 0 {
		t.Fatalf("delete records = %+v, want none", recs)
	}
	if _, err := m.Resolve(again); err != nil {
		t.Fatalf("the new worktree of the branch: %v", err)
	}
}

// TestDeletesKilledAtRandomMomentsLeaveNothingBehind kills the app at a
// random moment of a delete, many times under CODEHYDRA_SOAK=1. The moment
// is drawn from the first four fifths of a delete's length, measured
// first (and lowered when a kill came after the end), and the helper
// times the kill itself from its delete's start, so that most kills land
// inside a delete. The trials that really interrupted one (something of
// the target was left when the helper died) are counted, and so are those
// that left it half done (its worktree, the first thing a delete removes,
// already gone or partly removed); none may leave the worktree or the
// branch without its metadata. At least half of the trials must have interrupted a
// delete and, in the soak, a quarter must have left it half done.
func TestDeletesKilledAtRandomMomentsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	trials := 4
	if n, _ := strconv.Atoi(os.Getenv("CODEHYDRA_SOAK_DELETE_TRIALS")); n > 0 {
		trials = n
	} else if os.Getenv("CODEHYDRA_SOAK") != "" {
		trials = 60
	}
	deleteTakes := measureDelete(t)
	var failures, interrupted, halfDone int
	var recoveries []time.Duration
	for i := range trials {
		ok := t.Run(fmt.Sprintf("trial %d", i), func(t *testing.T) {
			f := newCrashFixture(t)
			// Deletes vary from one to the next; drawing from the first
			// four fifths keeps most kills inside the delete at hand.
			jitter := 1 + rand.N(deleteTakes*4/5)
			out := killAfter(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path}, jitter)
			if took, ok := deleteTook(out); ok {
				// The kill came after the end: deletes are quicker now
				// than measured, so the next kills come earlier.
				deleteTakes = min(deleteTakes, took)
			}
			f.checkMetadataWhileLeft(t)
			if len(f.leftovers(t, false)) > 0 {
				interrupted++
				if !exists(filepath.Join(f.target.Path, "work.txt")) {
					// The delete's first change was made: the kill left a
					// half-done state, not only an untouched workspace.
					halfDone++
				}
			}
			m, took := f.relaunch(t)
			recoveries = append(recoveries, took)
			if _, err := m.Resolve(f.target.Path); err == nil {
				// Killed before the worktree went: a second delete.
				if err := m.Delete(context.Background(), f.target.Path, DeleteOptions{}); err != nil {
					t.Fatalf("second delete after a kill %s in: %v", jitter, err)
				}
			}
			f.checkDeleted(t, m, false)
		})
		if !ok {
			failures++
		}
	}
	slices.Sort(recoveries)
	if len(recoveries) > 0 {
		t.Logf("FIGURE delete-killed-at-random: trials=%d interrupted=%d half-done=%d failures=%d delete=%s relaunch-p50=%s relaunch-max=%s",
			trials, interrupted, halfDone, failures, deleteTakes.Round(time.Millisecond),
			recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond))
	}
	if interrupted < (trials+1)/2 {
		t.Errorf("only %d of %d kills interrupted a delete (a delete took %s); the others came after its end and test nothing", interrupted, trials, deleteTakes)
	}
	// A kill before the delete's first change tests little: the soak's
	// many trials must leave a fair share half done (issue 22's run: 47 of 60).
	// The short run's four are too few to require it without flaking.
	if trials >= 20 && halfDone < trials/4 {
		t.Errorf("only %d of %d kills left a delete half done (a delete took %s); most came before its first change", halfDone, trials, deleteTakes)
	}
}

// measureDelete returns how long the delete of a crash fixture's target
// takes in the helper process: the shortest of three, since what is
// measured on a busy machine is mostly longer than a delete itself.
func measureDelete(t *testing.T) time.Duration {
	t.Helper()
	var took []time.Duration
	for range 3 {
		f := newCrashFixture(t)
		spec := deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path}
		cmd, out := startHelper(t, &spec)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		n, ok := deleteTook(out.String())
		if !ok || !strings.Contains(out.String(), "delete returned: <nil>") {
			t.Fatalf("the helper did not delete and say how long it took:\n%s", out)
		}
		took = append(took, n)
	}
	return slices.Min(took)
}

// deleteTook reads how long the helper's delete took from its output;
// false when it did not say (it was killed first).
func deleteTook(out string) (time.Duration, bool) {
	_, ns, ok := strings.Cut(out, deleteTookPrefix)
	ns, _, _ = strings.Cut(ns, "\n")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0, false
	}
	return time.Duration(n), true
}

// checkMetadataWhileLeft checks what a delete cut short left: while the
// target's worktree folder or its branch is there, so is its metadata
// (the last thing a delete removes).
func (f *crashFixture) checkMetadataWhileLeft(t *testing.T) {
	t.Helper()
	if (exists(f.target.Path) || branchOK(t, f.repo, "target")) && !f.hasMetadata(t) {
		t.Errorf("the target's worktree (there = %v) or branch (there = %v) is left without its metadata",
			exists(f.target.Path), branchOK(t, f.repo, "target"))
	}
}

// hasMetadata reports whether the target's metadata (the last thing a
// delete removes) is still there.
func (f *crashFixture) hasMetadata(t *testing.T) bool {
	t.Helper()
	out, _ := testenv.GitErr(f.repo, "config", "--get-regexp", `^branch\.target\.codehydra\.`)
	return out != ""
}
