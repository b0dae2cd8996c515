//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "proc-test-home-"))
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// grandchild starts sh that starts a background sleep ignoring SIGTERM,
// writes its pid to a file and then runs script; it returns the process
// and the grandchild's pid.
func grandchild(t *testing.T, script string) (*Process, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	p, err := Start(t.Context(), Options{Path: "sh", Args: []string{"-c",
		fmt.Sprintf(`(trap '' TERM; exec sleep 60) & echo $! > %s; %s`, pidFile, script)}})
	if err != nil {
		t.Fatal(err)
	}
	return p, waitPID(t, "the grandchild's pid", pidFile)
}

// waitPID waits for a process to write its pid to file, and returns it.
func waitPID(t *testing.T, what, file string) int {
	t.Helper()
	var pid int
	testenv.WaitFor(t, what, 10*time.Second, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestStopEndsTheWholeTreeEvenWhatIgnoresSIGTERM(t *testing.T) {
	p, pid := grandchild(t, "exec sleep 60")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := p.Stop(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the grandchild to be gone", 5*time.Second, func() bool { return !alive(pid) })
	if p.Running() {
		t.Error("Running after Stop")
	}
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
}

func TestWhatAProcessLeftBehindEndsWithIt(t *testing.T) {
	p, pid := grandchild(t, "exit 3")
	<-p.Done()
	if code := p.State().ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	testenv.WaitFor(t, "the grandchild to be gone", 5*time.Second, func() bool { return !alive(pid) })
}

func TestStartReportsAProgramThatIsNotThere(t *testing.T) {
	_, err := Start(t.Context(), Options{Path: "codehydra-no-such-program"})
	if !errors.Is(err, os.ErrNotExist) && !strings.Contains(fmt.Sprint(err), "not found") {
		t.Errorf("err = %v, want not found", err)
	}
}

func TestAConfinedProcessAndWhatItStartsStayInItsSandbox(t *testing.T) {
	want := testenv.RequireSandbox(t)
	dir := t.TempDir()
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := &sandbox.Policy{Grants: []sandbox.Grant{{Path: "/", Access: sandbox.Read}, {Path: ws, Access: sandbox.Write}}}
	var out bytes.Buffer
	// The grandchild writes, not the process itself: the domain is
	// inherited.
	p, err := Start(t.Context(), Options{Path: "sh", Dir: ws, Sandbox: pol, Stdout: &out, Stderr: &out, Args: []string{"-c",
		fmt.Sprintf(`sh -c 'echo in > in.txt; echo out > %s/out.txt || echo REFUSED'`, outside)}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandbox != want {
		t.Errorf("Sandbox = %+v, want %+v", p.Sandbox, want)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
		t.Errorf("the confined process could not write in its workspace: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil || !strings.Contains(out.String(), "REFUSED") {
		t.Errorf("the confined process wrote outside its grants (err %v)\n%s", err, out.String())
	}
}

func TestAProcessThatCannotBeConfinedDoesNotRun(t *testing.T) {
	testenv.RequireSandbox(t)
	marker := filepath.Join(t.TempDir(), "ran")
	// The helper refuses a policy whose folder on the way to a hole cannot
	// be expanded: here, one of more than a bounded number of rules.
	big := t.TempDir()
	for i := range 20001 {
		if err := os.WriteFile(filepath.Join(big, strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pol := &sandbox.Policy{Grants: []sandbox.Grant{{Path: big, Access: sandbox.Read}}, Deny: []string{filepath.Join(big, "0")}}
	_, err := Start(t.Context(), Options{Path: "sh", Args: []string{"-c", "touch " + marker}, Sandbox: pol})
	if err == nil {
		t.Fatal("started")
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Error("the program ran although its sandbox could not be enforced")
	}
	t.Log(err)
}

// TestAProcessLeadsASessionOfItsOwn: away from CodeHydra's terminal, which
// a confined process could otherwise type into.
func TestAProcessLeadsASessionOfItsOwn(t *testing.T) {
	p, err := Start(t.Context(), Options{Path: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	sid, err := unix.Getsid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if sid != p.Pid() {
		t.Errorf("session %d, want the process's own (%d)", sid, p.Pid())
	}
}
