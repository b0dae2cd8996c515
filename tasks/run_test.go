//go:build unix

// The tasks here are sh scripts.

package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/tasks/taskstest"
)

// sleeper is a command whose shell starts a child in the background,
// records both pids, and waits.
func sleeper() []string {
	return []string{"sh", "-c", `sleep 300 & echo $! > child.pid; echo $$ > shell.pid; echo started; wait`}
}

func TestRunReturnsTheExitCodeAndOutput(t *testing.T) {
	res, err := RunAndWait(context.Background(), RunOptions{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Dir: t.TempDir(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.TimedOut || res.Cancelled || res.Output != "out\nerr\n" || res.Dropped != 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestRunThatOutlivesItsTimeoutEndsItsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	res, err := RunAndWait(context.Background(), RunOptions{Argv: sleeper(), Dir: dir, Timeout: time.Second, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || time.Since(start) > 10*time.Second {
		t.Fatalf("result %+v after %s", res, time.Since(start))
	}
	for _, f := range []string{"shell.pid", "child.pid"} {
		pid := taskstest.PID(t, filepath.Join(dir, f))
		testenv.WaitFor(t, f+" gone", 5*time.Second, func() bool { return !taskstest.Alive(pid) })
	}
}

func TestRunCancelledEndsItsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		res, _ := RunAndWait(ctx, RunOptions{Argv: sleeper(), Dir: dir, Timeout: time.Minute})
		done <- res
	}()
	child := taskstest.PID(t, filepath.Join(dir, "child.pid"))
	cancel()
	select {
	case res := <-done:
		if !res.Cancelled || res.TimedOut {
			t.Fatalf("result %+v", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a cancelled run did not end")
	}
	// The group's SIGKILL is sent by the time Run returns; the kernel
	// ends the child a moment later.
	testenv.WaitFor(t, "the child of the cancelled run gone", 5*time.Second, func() bool { return !taskstest.Alive(child) })
}

func TestRunKillsWhatTheTaskLeftRunningInItsGroup(t *testing.T) {
	dir := t.TempDir()
	res, err := RunAndWait(context.Background(), RunOptions{Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > child.pid"}, Dir: dir, Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v, %v", res, err)
	}
	child := taskstest.PID(t, filepath.Join(dir, "child.pid"))
	testenv.WaitFor(t, "background child gone", 5*time.Second, func() bool { return !taskstest.Alive(child) })
}

func TestRunKeepsTheTailOfMegabytesOfOutput(t *testing.T) {
	res, err := RunAndWait(context.Background(), RunOptions{
		Argv: []string{"sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END"},
		Dir:  t.TempDir(), Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 5000005 || len(res.Output) != DefaultMaxOutput || res.Dropped != res.Bytes-int64(DefaultMaxOutput) || !strings.HasSuffix(res.Output, "x\nEND\n") {
		t.Fatalf("bytes %d, kept %d, dropped %d, end %q", res.Bytes, len(res.Output), res.Dropped, res.Output[max(0, len(res.Output)-10):])
	}
}

func TestTailBufferNeverGrowsPastTwiceItsLimit(t *testing.T) {
	tl := newTail(1000)
	chunk := []byte(strings.Repeat("ab\n", 111))
	for range 100000 {
		tl.write(chunk)
	}
	if cap(tl.buf) > 2000 {
		t.Fatalf("buffer grew to %d bytes", cap(tl.buf))
	}
	out, total, dropped := tl.result()
	if len(out) != 1000 || total != int64(len(chunk))*100000 || dropped != total-1000 {
		t.Fatalf("kept %d, total %d, dropped %d", len(out), total, dropped)
	}
	tl.write([]byte(strings.Repeat("z", 5000)))
	if out, _, _ := tl.result(); out != strings.Repeat("z", 1000) {
		t.Fatalf("a write over the limit kept %q…", out[:10])
	}
}

func TestRunReportsProgressWithTheLastLine(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	_, err := RunAndWait(context.Background(), RunOptions{
		Argv: []string{"sh", "-c", "echo first; echo working; sleep 1"}, Dir: t.TempDir(), Timeout: time.Minute,
		ProgressEvery: 100 * time.Millisecond,
		Progress:      func(p Progress) { mu.Lock(); got = append(got, p); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 || got[len(got)-1].Line != "working" {
		t.Fatalf("progress %+v", got)
	}
}

func TestRunOfAMissingCommandIsAnError(t *testing.T) {
	if _, err := RunAndWait(context.Background(), RunOptions{Argv: []string{"no-such-command-xyz"}, Dir: t.TempDir(), Timeout: time.Second}); err == nil {
		t.Fatal("no error")
	}
}

// A make that started CodeHydra (make run) must not reach a task's make:
// its MAKELEVEL makes the task print "make[1]: Entering directory".
func TestRunLeavesOutTheVariablesOfTheMakeThatStartedUs(t *testing.T) {
	t.Setenv("MAKELEVEL", "1")
	t.Setenv("MAKEFLAGS", "w")
	res, err := RunAndWait(context.Background(), RunOptions{Argv: []string{"sh", "-c", `echo "[$MAKELEVEL][$MAKEFLAGS][$HOME]"`}, Dir: t.TempDir(), Timeout: time.Minute})
	if err != nil || res.Output != "[][]["+os.Getenv("HOME")+"]\n" {
		t.Fatalf("output %q, %v; want no make variables, the rest of the environment kept", res.Output, err)
	}
}
