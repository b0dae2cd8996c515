package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"codehydra/internal/testenv"
)

// helperEnv makes the test binary a helper process (see TestMain):
//   - "sleep": sleeps for a minute;
//   - "tree|FILE|CODE": starts a sleep helper with plain os/exec (as a
//     program CodeHydra runs would), writes its pid to FILE, then exits
//     with CODE once its stdin closes, or sleeps when CODE is "sleep";
//   - "owner|FILE": starts a sleep helper through Start (as CodeHydra
//     does), writes its pid to FILE and sleeps, to be killed by the test.
//
// ("|" parts them: a Windows path holds ":".)
const helperEnv = "CODEHYDRA_TEST_PROC_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(testenv.Main(m, "proc-test-home-"))
}

func helper(mode string) int {
	kind, rest, _ := strings.Cut(mode, "|")
	switch kind {
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	case "tree", "owner":
		file, code, _ := strings.Cut(rest, "|")
		var pid int
		if kind == "tree" {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"=sleep")
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			pid = cmd.Process.Pid
		} else {
			p, err := Start(context.Background(), Options{Path: os.Args[0], Env: append(os.Environ(), helperEnv+"=sleep")})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			pid = p.Pid()
		}
		if err := os.WriteFile(file, []byte(strconv.Itoa(pid)), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if n, err := strconv.Atoi(code); err == nil {
			_, _ = io.Copy(io.Discard, os.Stdin)
			return n
		}
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// alive reports whether a process with the pid runs.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

// grandchild starts a helper of mode kind through Start and returns it and
// the pid of the helper that it started in turn; stdin is the helper's.
func grandchild(t *testing.T, kind, code string, stdin io.Reader) (*Process, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	var stderr testenv.SyncBuffer
	p, err := Start(t.Context(), Options{Path: os.Args[0], Stdin: stdin, Stderr: &stderr,
		Env: append(os.Environ(), helperEnv+"="+kind+"|"+pidFile+"|"+code)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background(), 0) })
	return p, readPid(t, pidFile, &stderr)
}

func readPid(t *testing.T, file string, stderr *testenv.SyncBuffer) int {
	t.Helper()
	var pid int
	if !testenv.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}) {
		t.Fatalf("no grandchild's pid in %s after 30s; the helper said: %s", file, stderr.String())
	}
	if !alive(pid) {
		t.Fatalf("the grandchild %d does not run", pid)
	}
	return pid
}

// Stop ends the job object: the process and what it started.
func TestStopEndsTheWholeJob(t *testing.T) {
	p, pid := grandchild(t, "tree", "sleep", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("Running after Stop")
	}
	testenv.WaitFor(t, "the grandchild to be gone", 5*time.Second, func() bool { return !alive(pid) })
}

// What a process leaves in its job when it exits ends with it.
func TestWhatAProcessLeftBehindEndsWithIt(t *testing.T) {
	exit, w := io.Pipe()
	defer w.Close()
	p, pid := grandchild(t, "tree", "3", exit)
	w.Close()
	<-p.Done()
	if code := p.State().ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	testenv.WaitFor(t, "the grandchild to be gone", 5*time.Second, func() bool { return !alive(pid) })
}

// A CodeHydra that is killed takes what it started with it: its handle to
// the job object closes, and the job kills its processes on close.
func TestTheJobEndsWhenItsOwnerIsKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	var stderr testenv.SyncBuffer
	owner := exec.Command(os.Args[0])
	owner.Env = append(os.Environ(), helperEnv+"=owner|"+pidFile)
	owner.Stderr = &stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	pid := readPid(t, pidFile, &stderr)
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	testenv.WaitFor(t, "the owner's child to be gone", 10*time.Second, func() bool { return !alive(pid) })
}

func TestStartReportsAProgramThatIsNotThere(t *testing.T) {
	_, err := Start(t.Context(), Options{Path: "codehydra-no-such-program"})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("err = %v, want not found", err)
	}
}
