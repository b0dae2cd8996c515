package proc

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// escapee starts sh with marker in its environment (and as its Marker
// when mark is set); sh starts, with setsid, a sleep that ignores SIGTERM
// in a session and group of its own, writes its pid to a file and then
// runs script once the pid is written. It returns the process and the escapee's pid, which the
// test kills at its end in any case.
func escapee(t *testing.T, marker string, mark bool, script string) (*Process, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	o := Options{Path: "sh", Args: []string{"-c",
		fmt.Sprintf(`setsid sh -c 'trap "" TERM; echo $$ > %[1]s; exec sleep 60' & while [ ! -s %[1]s ]; do sleep 0.01; done; %[2]s`, pidFile, script)},
		Env: append(os.Environ(), marker)}
	if mark {
		o.Marker = marker
	}
	p, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	pid := waitPID(t, "the escapee's pid", pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid == p.Pid() {
		t.Fatalf("the escapee's group is %d (%v): it did not leave the group %d", pgid, err, p.Pid())
	}
	return p, pid
}

func newMarker() string { return "CODEHYDRA_TEST_MARKER=" + rand.Text() }

func TestStopEndsWhatLeftTheTreeWithItsMarker(t *testing.T) {
	p, pid := escapee(t, newMarker(), true, "exec sleep 60")
	// A process with another marker, outside the tree, is not touched.
	other := startMarked(t, newMarker())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the escapee to be gone", 5*time.Second, func() bool { return !alive(pid) })
	if !alive(other) {
		t.Error("a process with another marker was killed")
	}
}

// A process that ends by itself leaves what left its tree (a task that
// starts a daemon means it to run on); EndMarked ends it later, SIGKILL
// after the grace for one that ignores SIGTERM.
func TestWhatLeftTheTreeOutlivesTheProcessUntilEndMarked(t *testing.T) {
	marker := newMarker()
	p, pid := escapee(t, marker, true, "exit 0")
	<-p.Done()
	if !alive(pid) {
		t.Fatal("the daemon a process started died with it")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	EndMarked(ctx, marker, 200*time.Millisecond)
	testenv.WaitFor(t, "the escapee to be gone", 5*time.Second, func() bool { return !alive(pid) })
}

// Without the marker nothing finds what left the group: the case the
// marker is for.
func TestWithoutAMarkerWhatLeftTheTreeOutlivesIt(t *testing.T) {
	p, pid := escapee(t, newMarker(), false, "exec sleep 60")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Error("the escapee is gone without a marker: the marker tests prove nothing")
	}
}

func TestAMarkerMustBeInTheEnvironment(t *testing.T) {
	_, err := Start(t.Context(), Options{Path: "true", Env: []string{"A=b"}, Marker: newMarker()})
	if err == nil || !strings.Contains(err.Error(), "marker") {
		t.Errorf("err = %v, want one about the marker", err)
	}
}

// startMarked starts a sleep with marker in its environment, outside any tree of
// this package, and returns its pid; the test kills it at its end.
func startMarked(t *testing.T, marker string) int {
	t.Helper()
	attr := &os.ProcAttr{Env: append(os.Environ(), marker), Sys: &syscall.SysProcAttr{Setsid: true}}
	sleep, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, attr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Kill(); _, _ = sleep.Wait() })
	return sleep.Pid
}
