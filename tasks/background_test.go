package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/reap"
	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/tasks/taskstest"
	"codehydra/workspace"
)

// newRuns is a Runs whose records go to a temp folder, closed at the
// end of the test.
func newRuns(t *testing.T, o RunsOptions) *Runs {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	r := NewRuns(o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return r
}

func startRun(t *testing.T, r *Runs, ws, name string, script string) Run {
	t.Helper()
	run, err := r.Start(t.Context(), StartOptions{Workspace: ws, Name: name, Dir: ws, Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	if run.ID == "" || run.Pid == 0 || run.State != StateRunning || run.Started.IsZero() {
		t.Fatalf("started %+v", run)
	}
	return run
}

func stopRun(t *testing.T, r *Runs, ws, idOrName string) Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	run, err := r.Stop(ctx, ws, idOrName)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// worktree is a linked worktree of a new repository, with the port block
// first+10 recorded for it.
func worktree(t *testing.T, first int) string {
	t.Helper()
	repo := testenv.GitRepo(t, "repo")
	ws := filepath.Join(t.TempDir(), "ws")
	testenv.Git(t, repo, "worktree", "add", "-b", "ws", ws)
	if err := workspace.RecordPorts(ws, workspace.PortBlock{First: first, Count: 10}); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestABackgroundRunServesOnItsWorkspacesPortUntilStopped(t *testing.T) {
	testenv.NeedPython3(t)
	port := testenv.FreePort(t)
	ws := worktree(t, port)
	var mu sync.Mutex
	changes := 0
	r := newRuns(t, RunsOptions{OnChange: func(string) { mu.Lock(); changes++; mu.Unlock() },
		Listening: func(pids []int) []int { return []int{len(pids)} }})
	run := startRun(t, r, ws, "make:dev", `exec python3 -m http.server --bind 127.0.0.1 "$PORT"`)

	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testenv.WaitFor(t, "the dev server to answer on the workspace's port", 15*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	list := r.List(ws)
	if len(list) != 1 || list[0].ID != run.ID || list[0].State != StateRunning || !slices.Equal(list[0].Ports, []int{1}) {
		t.Fatalf("List = %+v", list)
	}
	if pids := r.Pids(ws); !slices.Equal(pids, []int{run.Pid}) {
		t.Fatalf("Pids = %v, want %d", pids, run.Pid)
	}

	stopped := stopRun(t, r, ws, run.ID)
	if stopped.State != StateStopped || stopped.Ended.IsZero() || stopped.ExitCode != nil {
		t.Fatalf("stopped %+v", stopped)
	}
	if taskstest.Alive(run.Pid) {
		t.Fatal("the dev server runs after Stop returned")
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the port still answers after Stop")
	}
	if list := r.List(ws); len(list) != 1 || list[0].State != StateStopped || list[0].Ports != nil {
		t.Fatalf("List after Stop = %+v", list)
	}
	mu.Lock()
	defer mu.Unlock()
	if changes != 2 {
		t.Errorf("OnChange heard %d changes, want 2 (start, end)", changes)
	}
}

// groupScript starts a child that ignores SIGTERM and another that does
// too and leaves the group (setsid), records the pids and waits.
const groupScript = `(trap '' TERM; exec sleep 300) & echo $! > child.pid; ` +
	`setsid sh -c 'trap "" TERM; echo $$ > escapee.pid; exec sleep 300' & ` +
	`echo $$ > shell.pid; while [ ! -s escapee.pid ]; do sleep 0.01; done; echo started; wait`

func TestStopEndsTheWholeGroupEvenAChildThatIgnoresSIGTERM(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{Grace: 300 * time.Millisecond})
	run := startRun(t, r, ws, "make:group", groupScript)
	child := taskstest.PID(t, filepath.Join(ws, "child.pid"))
	left := escapee(t, ws, run.Pid)
	if got := stopRun(t, r, ws, "make:group"); got.ID != run.ID || got.State != StateStopped {
		t.Fatalf("stopped %+v", got)
	}
	for _, pid := range []int{run.Pid, child, left} {
		testenv.WaitFor(t, fmt.Sprintf("process %d gone", pid), 5*time.Second, func() bool { return !taskstest.Alive(pid) })
	}
	if entries, _ := os.ReadDir(r.o.Dir); len(entries) != 0 {
		t.Errorf("records left after Stop: %v", entries)
	}
}

// A run that ends by itself leaves the daemon it started (it may be what
// the task is for); stopping the workspace's runs ends that too.
func TestStopAllEndsTheDaemonOfARunThatEndedByItself(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{Grace: 300 * time.Millisecond})
	run := startRun(t, r, ws, "make:daemon", `setsid sh -c 'trap "" TERM; echo $$ > escapee.pid; exec sleep 300' & `+
		`while [ ! -s escapee.pid ]; do sleep 0.01; done; exit 0`)
	daemon := escapee(t, ws, run.Pid)
	testenv.WaitFor(t, "the run to end by itself", 10*time.Second, func() bool {
		l := r.List(ws)
		return len(l) == 1 && l[0].State != StateRunning
	})
	if !taskstest.Alive(daemon) {
		t.Fatal("the daemon ended with the run that started it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := r.StopAll(ctx, ws); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the daemon gone", 5*time.Second, func() bool { return !taskstest.Alive(daemon) })
}

func TestOutputIsReadAPageAtATimeFromTheKeptTail(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{MaxOutput: 4096})
	run := startRun(t, r, ws, "make:log", `i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo "line $i"; done; echo é; exec sleep 300`)
	var all strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&all, "line %d\n", i)
	}
	all.WriteString("é\n")
	want := all.String()
	var tail OutputPage
	testenv.WaitFor(t, "all the output", 10*time.Second, func() bool {
		var err error
		tail, err = r.Output(ws, run.ID, -1, 0)
		return err == nil && tail.Total == int64(len(want))
	})
	if tail.Dropped != int64(len(want)-4096) || tail.Offset != tail.Dropped || tail.Next != tail.Total || !tail.Running ||
		tail.Text != want[len(want)-4096:] {
		t.Fatalf("tail: offset %d next %d total %d dropped %d", tail.Offset, tail.Next, tail.Total, tail.Dropped)
	}

	// From the start: the page starts where the kept part does.
	var paged strings.Builder
	for off := int64(0); off < tail.Total; {
		p, err := r.Output(ws, "make:log", off, 100)
		if err != nil {
			t.Fatal(err)
		}
		if p.Next <= p.Offset || len(p.Text) > 100 || p.Offset < off {
			t.Fatalf("page at %d: offset %d next %d, %d bytes", off, p.Offset, p.Next, len(p.Text))
		}
		paged.WriteString(p.Text)
		off = p.Next
	}
	if paged.String() != tail.Text {
		t.Fatal("the pages do not add up to the kept output")
	}

	// A page cut in the middle of a character ends before it.
	eAt := int64(strings.LastIndex(want, "é"))
	if p, _ := r.Output(ws, run.ID, eAt-3, 4); p.Text != "00\n" || p.Next != eAt {
		t.Fatalf("page over é: %q next %d, want \"00\\n\" next %d", p.Text, p.Next, eAt)
	}
	if p, _ := r.Output(ws, run.ID, eAt+1, 10); p.Text != "\n" || p.Offset != eAt+2 {
		t.Fatalf("page from inside é: %q at %d", p.Text, p.Offset)
	}
	if _, err := r.Output(ws, "nope", 0, 0); !errors.Is(err, ErrNoRun) {
		t.Fatalf("Output of no run: %v", err)
	}
}

func TestATaskRunsOnceAtATimePerWorkspace(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	r := newRuns(t, RunsOptions{})
	first := startRun(t, r, ws, "make:dev", "exec sleep 300")
	if _, err := r.Start(t.Context(), StartOptions{Workspace: ws, Name: "make:dev", Dir: ws, Argv: []string{"true"}}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second start: %v, want ErrAlreadyRunning", err)
	}
	startRun(t, r, ws, "make:other", "exec sleep 300")
	startRun(t, r, other, "make:dev", "exec sleep 300")

	stopRun(t, r, ws, "make:dev")
	again := startRun(t, r, ws, "make:dev", "exec sleep 300")
	list := r.List(ws)
	if len(list) != 2 || list[0].ID != again.ID || list[0].ID == first.ID || list[1].Name != "make:other" {
		t.Fatalf("List = %+v; want the new run of make:dev in place of the stopped one, and make:other", list)
	}
}

// A run in the foreground holds its task: the tray's Start of the same
// task (a background run) waits for its end, and the other way round.
func TestAHeldTaskDoesNotStartInTheBackgroundNorTheOtherWayRound(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{})
	release, err := r.Hold(ws, "make:dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(t.Context(), StartOptions{Workspace: ws, Name: "make:dev", Dir: ws, Argv: []string{"sleep", "60"}}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Start of a held task: %v, want ErrAlreadyRunning", err)
	}
	if _, err := r.Hold(ws, "make:dev"); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("a second Hold: %v, want ErrAlreadyRunning", err)
	}
	if rel, err := r.Hold(ws, "make:other"); err != nil {
		t.Fatalf("another task: %v", err)
	} else {
		rel()
	}
	release()
	release() // a second release changes nothing
	startRun(t, r, ws, "make:dev", "exec sleep 60")
	if _, err := r.Hold(ws, "make:dev"); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("Hold of a task running in the background: %v, want ErrAlreadyRunning", err)
	}
	stopRun(t, r, ws, "make:dev")
	if rel, err := r.Hold(ws, "make:dev"); err != nil {
		t.Fatalf("Hold after the run was stopped: %v", err)
	} else {
		rel()
	}
}

func TestARunThatEndsByItselfIsKeptWithHowItEnded(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{})
	for _, tc := range []struct {
		name, script, state, output string
		code                        int
	}{
		{"make:ok", "echo done", StateExited, "done\n", 0},
		{"make:fail", "echo failing; exit 3", StateFailed, "failing\n", 3},
	} {
		run := startRun(t, r, ws, tc.name, tc.script)
		var got Run
		testenv.WaitFor(t, tc.name+" to end", 10*time.Second, func() bool {
			for _, l := range r.List(ws) {
				if l.ID == run.ID {
					got = l
				}
			}
			return got.State != StateRunning
		})
		if got.State != tc.state || got.ExitCode == nil || *got.ExitCode != tc.code || got.Ended.IsZero() {
			t.Errorf("%s ended as %+v", tc.name, got)
		}
		if p, err := r.Output(ws, run.ID, 0, 0); err != nil || p.Running || p.Text != tc.output {
			t.Errorf("%s output %+v, %v", tc.name, p, err)
		}
		// Stopping an ended run changes nothing.
		if again := stopRun(t, r, ws, run.ID); again.State != tc.state {
			t.Errorf("Stop of an ended run made it %s", again.State)
		}
	}
}

func TestStopAllStopsOneWorkspacesRunsAndCloseTheRest(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	r := NewRuns(RunsOptions{Dir: t.TempDir(), Grace: 300 * time.Millisecond})
	a := startRun(t, r, ws, "make:a", groupScript)
	b := startRun(t, r, ws, "make:b", "exec sleep 300")
	c := startRun(t, r, other, "make:a", "exec sleep 300")
	child := taskstest.PID(t, filepath.Join(ws, "child.pid"))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := r.StopAll(ctx, ws); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{a.Pid, b.Pid} {
		if taskstest.Alive(pid) {
			t.Errorf("process %d runs after StopAll", pid)
		}
	}
	testenv.WaitFor(t, "the child gone", 5*time.Second, func() bool { return !taskstest.Alive(child) })
	if !taskstest.Alive(c.Pid) || len(r.Pids(other)) != 1 {
		t.Fatal("StopAll stopped another workspace's run")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if taskstest.Alive(c.Pid) {
		t.Error("a run outlived Close")
	}
	if _, err := r.Start(ctx, StartOptions{Workspace: ws, Name: "make:a", Dir: ws, Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestAStartThatFailsKeepsTheEndedRun(t *testing.T) {
	ws := t.TempDir()
	r := newRuns(t, RunsOptions{})
	run := startRun(t, r, ws, "make:x", "exit 0")
	testenv.WaitFor(t, "the run to end", 10*time.Second, func() bool { return len(r.Pids(ws)) == 0 })
	if _, err := r.Start(t.Context(), StartOptions{Workspace: ws, Name: "make:x", Dir: ws, Argv: []string{"codehydra-no-such-program"}}); err == nil {
		t.Fatal("started a program that is not there")
	}
	if list := r.List(ws); len(list) != 1 || list[0].ID != run.ID {
		t.Fatalf("List = %+v, want the ended run", list)
	}
}

// crashingAppEnv makes the test binary act as a CodeHydra that starts a
// background run, says "READY", and waits to be killed.
const crashingAppEnv = "CODEHYDRA_TEST_TASKS_CRASHING_APP"

type crashingAppSpec struct{ Dir, Workspace string }

func runCrashingApp() {
	var spec crashingAppSpec
	if err := json.Unmarshal([]byte(os.Getenv(crashingAppEnv)), &spec); err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(2)
	}
	r := NewRuns(RunsOptions{Dir: spec.Dir})
	if _, err := r.Start(context.Background(), StartOptions{Workspace: spec.Workspace, Name: "make:dev", Dir: spec.Workspace,
		Argv: []string{"sh", "-c", groupScript}}); err != nil {
		fmt.Println("start:", err)
		os.Exit(2)
	}
	for !testenv.Exists(filepath.Join(spec.Workspace, "escapee.pid")) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("READY")
	select {}
}

func TestReapEndsWhatTheRunsOfACrashedAppLeft(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux can prove a process is a run's (see reap.MarkedMembers); elsewhere nothing is reaped")
	}
	dir, ws := t.TempDir(), t.TempDir()
	app := testenv.StartReadyApp(t, crashingAppEnv, crashingAppSpec{Dir: dir, Workspace: ws})
	recs, bad, err := reap.ReadRecords[runRecord](dir)
	if err != nil || len(bad) > 0 || len(recs) != 1 {
		t.Fatalf("records %+v, bad %v, %v", recs, bad, err)
	}
	rec := recs[0]
	if rec.OwnerPID != app.Process.Pid || rec.Task != "make:dev" || rec.Workspace != ws || rec.Marker == "" || rec.StartTime == 0 {
		t.Fatalf("record %+v", rec)
	}
	child := taskstest.PID(t, filepath.Join(ws, "child.pid"))
	left := escapee(t, ws, rec.PID)

	// The app crashes hard: its run's shell gets the death signal, the
	// child that ignores it stays.
	if err := app.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = app.Wait()
	testenv.WaitFor(t, "the run's shell gone with the app", 5*time.Second, func() bool { return !taskstest.Alive(rec.PID) })
	if !taskstest.Alive(child) {
		t.Fatal("the child died with the app; the test proves nothing")
	}

	r := newRuns(t, RunsOptions{Dir: dir, Grace: 300 * time.Millisecond})
	if err := r.Reap(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the left-over child reaped", 5*time.Second, func() bool { return !taskstest.Alive(child) })
	testenv.WaitFor(t, "the child that left the group reaped", 5*time.Second, func() bool { return !taskstest.Alive(left) })
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("records left after Reap: %v", entries)
	}
}

func TestABackgroundRunIsConfinedToItsSandbox(t *testing.T) {
	testenv.RequireSandbox(t)
	dir := t.TempDir()
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := &sandbox.Policy{Grants: []sandbox.Grant{{Path: "/", Access: sandbox.Read}, {Path: ws, Access: sandbox.Write}}}
	r := newRuns(t, RunsOptions{})
	// A child of the run writes, not the run itself: the domain is
	// inherited.
	run, err := r.Start(t.Context(), StartOptions{Workspace: ws, Name: "make:dev", Dir: ws, Sandbox: pol,
		Argv: []string{"sh", "-c", fmt.Sprintf(`sh -c 'echo in > in.txt; echo out > %s/out.txt || echo REFUSED'`, outside)}})
	if err != nil {
		t.Fatal(err)
	}
	var out OutputPage
	testenv.WaitFor(t, "the run to end", 10*time.Second, func() bool {
		out, _ = r.Output(ws, run.ID, 0, 0)
		return !out.Running
	})
	if !testenv.Exists(filepath.Join(ws, "in.txt")) {
		t.Errorf("the confined run could not write in its workspace\n%s", out.Text)
	}
	if testenv.Exists(filepath.Join(outside, "out.txt")) || !strings.Contains(out.Text, "REFUSED") {
		t.Errorf("the confined run wrote outside its grants\n%s", out.Text)
	}
}

func TestForgetDropsAGoneWorkspacesEndedRunsAndKeepsOthers(t *testing.T) {
	runs := newRuns(t, RunsOptions{})
	ws, other := t.TempDir(), t.TempDir()
	for _, w := range []string{ws, other} {
		if _, err := runs.Start(t.Context(), StartOptions{Workspace: w, Name: "quick", Argv: []string{"sh", "-c", "echo done"}, Dir: w}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, "both runs to end", 10*time.Second, func() bool {
		return len(runs.List(ws)) == 1 && runs.List(ws)[0].State != StateRunning &&
			len(runs.List(other)) == 1 && runs.List(other)[0].State != StateRunning
	})
	runs.Forget(ws)
	if got := runs.List(ws); len(got) != 0 {
		t.Fatalf("after Forget the workspace still lists %+v", got)
	}
	if _, err := runs.Output(ws, "quick", -1, 100); err == nil {
		t.Fatal("after Forget the workspace's run output can still be read")
	}
	if got := runs.List(other); len(got) != 1 {
		t.Fatalf("Forget of one workspace dropped another's runs: %+v", got)
	}
}
