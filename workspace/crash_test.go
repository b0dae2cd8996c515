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
	// or "before:<git args>" / "after:<git args>" of a git command the
	// delete runs; "" runs the delete to its end.
	Point string
	// Mark is a file the helper creates when it reached Point (or, without
	// one, when the delete starts).
	Mark string
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
	m := NewManager(Options{Projects: []string{spec.Repo}, WorktreeRoot: spec.Root})
	mark := func() {
		if err := os.WriteFile(spec.Mark, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	m.SetAgents(&blockingAgents{point: spec.Point == "stop-agent", mark: mark})
	when, gitArgs, _ := strings.Cut(spec.Point, ":")
	m.git.command = func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		if gitArgs == "" || !strings.HasPrefix(strings.Join(arg, " "), gitArgs) {
			return exec.CommandContext(ctx, name, arg...)
		}
		// Run the git command (or not), say so, and hang until killed.
		// (The git runner sets the environment, so the mark goes in the
		// script; temp paths hold no quote.)
		script := `touch '` + spec.Mark + `'; exec sleep 3600`
		if when == "after" {
			script = `"$0" "$@" || exit; ` + script
		}
		return exec.CommandContext(ctx, "sh", append([]string{"-c", script, name}, arg...)...)
	}
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spec.Point == "" {
		mark()
	}
	err := m.Delete(context.Background(), spec.Path, DeleteOptions{KeepBranch: spec.KeepBranch})
	fmt.Println("delete returned:", err)
}

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
	f := &crashFixture{repo: newRepo(t), root: filepath.Join(realDir(t), "worktrees")}
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
	commitFile(t, f.target.Path, "work.txt", "committed work\n", "work")
	writeFile(t, filepath.Join(f.target.Path, "untracked", "deep", "file.txt"), "untracked")
	outside := realDir(t)
	f.outsideFile = filepath.Join(outside, "precious.txt")
	writeFile(t, f.outsideFile, "keep me")
	for link, to := range map[string]string{"link-dir": outside, "link-file": f.outsideFile, "link-project": f.repo, "link-sibling": f.sibling.Path} {
		if err := os.Symlink(to, filepath.Join(f.target.Path, link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(f.sibling.Path, "sibling-work.txt"), "uncommitted in the sibling")
	f.branches = branchesBut(gitT(t, f.repo, "branch", "--format=%(refname:short)"), "target")
	return f
}

// killDuring runs the helper with spec, waits until it reached its point
// (plus jitter when given), kills it with SIGKILL, and waits until every
// process it started has ended, as after a real crash.
func killDuring(t *testing.T, spec deleteSpec, jitter time.Duration) {
	t.Helper()
	spec.Mark = filepath.Join(t.TempDir(), "mark")
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDeleteProcess$")
	cmd.Env = append(os.Environ(), killedDeleteEnv+"="+string(raw), "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for !exists(spec.Mark) {
		select {
		case err := <-exited:
			t.Fatalf("helper ended before reaching %q: %v\n%s", spec.Point, err, out)
		default:
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("helper did not reach %q\n%s", spec.Point, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if jitter > 0 {
		// The kill lands at a random moment of the delete on purpose.
		time.Sleep(jitter)
	}
	if spec.Point != "" {
		// The helper's stand-in commands hang; the group goes with it.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	} else {
		// Only the app dies: a git command it started runs to its end,
		// as it would after a real crash.
		_ = cmd.Process.Kill()
	}
	<-exited
	deadline = time.Now().Add(20 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("processes of the killed helper did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
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
// metadata, branch (unless kept), delete record — and that nothing else
// changed.
func (f *crashFixture) checkDeleted(t *testing.T, m *Manager, keepBranch bool) {
	t.Helper()
	if exists(f.target.Path) {
		t.Error("the target's folder is still there")
	}
	if list := gitT(t, f.repo, "worktree", "list", "--porcelain"); strings.Contains(list, f.target.Path+"\n") {
		t.Errorf("git still lists the target:\n%s", list)
	}
	if got := branchOK(t, f.repo, "target"); got != keepBranch {
		t.Errorf("branch target exists = %v, want %v", got, keepBranch)
	}
	if out, _ := gitErr(f.repo, "config", "--get-regexp", `^branch\.target\.codehydra\.`); out != "" {
		t.Errorf("the target's metadata is left: %q", out)
	}
	if recs, err := readPending(filepath.Join(f.repo, ".git")); err != nil || len(recs) != 0 {
		t.Errorf("delete records left: %+v, %v", recs, err)
	}
	if _, err := m.Resolve(f.target.Path); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("the target still resolves: %v", err)
	}
	if err := m.Delete(context.Background(), f.target.Path, DeleteOptions{}); CodeOf(err) != CodeWorkspaceNotFound {
		t.Errorf("a delete after the end: %v, want workspace-not-found", err)
	}
	f.checkUntouched(t, m, keepBranch)
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
	if got := gitT(t, f.repo, "status", "--porcelain"); got != "" {
		t.Errorf("the main checkout changed: %q", got)
	}
	if got := gitT(t, f.sibling.Path, "status", "--porcelain"); got != "?? sibling-work.txt" {
		t.Errorf("the sibling's status changed: %q", got)
	}
	if got := gitT(t, f.repo, "config", "--get", "branch.target-sibling.codehydra.note"); got != "note of target-sibling" {
		t.Errorf("the sibling's metadata = %q", got)
	}
	branches := gitT(t, f.repo, "branch", "--format=%(refname:short)")
	if keptTarget {
		branches = branchesBut(branches, "target")
	}
	if branches != f.branches {
		t.Errorf("branches = %q, want %q", branches, f.branches)
	}
	if _, err := m.Resolve(f.sibling.Path); err != nil {
		t.Errorf("the sibling does not resolve: %v", err)
	}
	if out, err := gitErr(f.repo, "fsck", "--no-progress"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// branchesBut is a branch list (one per line) without branch.
func branchesBut(list, branch string) string {
	return strings.Join(slices.DeleteFunc(strings.Split(list, "\n"), func(b string) bool { return b == branch }), "\n")
}

func branchOK(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := gitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
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
		{point: "before:config --local --remove-section"},
		{point: "after:config --local --remove-section"},
		{point: "before:worktree remove"},
		{point: "after:worktree remove", worktreeGone: true},
		{point: "after:worktree remove", keepBranch: true, worktreeGone: true},
		{point: "before:branch -D", worktreeGone: true},
		{point: "after:branch -D", worktreeGone: true},
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
			killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, KeepBranch: tt.keepBranch, Point: tt.point}, 0)
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
	killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, Point: "after:worktree remove"}, 0)
	lock := filepath.Join(f.repo, ".git", "refs", "heads", "target.lock")
	writeFile(t, lock, "")
	m, _ := f.relaunch(t)
	if !branchOK(t, f.repo, "target") {
		t.Fatal("the launch deleted a branch whose ref is locked")
	}
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
	killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path, Point: "after:worktree remove"}, 0)
	// Before the next launch the user checks the branch out again
	// elsewhere, outside the app.
	again := filepath.Join(realDir(t), "again")
	gitT(t, f.repo, "worktree", "add", again, "target")
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
// random moment of a delete, many times under CODEHYDRA_SOAK=1.
func TestDeletesKilledAtRandomMomentsLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	trials := 4
	if n, _ := strconv.Atoi(os.Getenv("CODEHYDRA_SOAK_DELETE_TRIALS")); n > 0 {
		trials = n
	} else if os.Getenv("CODEHYDRA_SOAK") != "" {
		trials = 60
	}
	var failures int
	var recoveries []time.Duration
	for i := range trials {
		ok := t.Run(fmt.Sprintf("trial %d", i), func(t *testing.T) {
			f := newCrashFixture(t)
			jitter := time.Duration(rand.IntN(120)) * time.Millisecond
			killDuring(t, deleteSpec{Repo: f.repo, Root: f.root, Path: f.target.Path}, jitter)
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
		t.Logf("FIGURE delete-killed-at-random: trials=%d failures=%d relaunch-p50=%s relaunch-max=%s",
			trials, failures, recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond))
	}
}
