//go:build unix

package prepare

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// alive reports a process that runs (a zombie has ended).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: trust kill
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// awaitChildEnd waits until the process whose pid the setup wrote to
// child.pid in dir has ended.
func awaitChildEnd(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	testenv.WaitFor(t, "the setup's child to end", 5*time.Second, func() bool { return !alive(pid) })
}

func TestRunPassesEveryOutputLine(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	err := Run(context.Background(), Command{
		Argv:    []string{"sh", "-c", "echo one; echo two >&2; printf three"},
		Dir:     t.TempDir(),
		Timeout: time.Minute,
		Line: func(l string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, l)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, "|"); got != "one|two|three" {
		t.Fatalf("lines %q, want one|two|three", got)
	}
}

func TestRunFailureSaysExitCodeAndLastLines(t *testing.T) {
	err := Run(context.Background(), Command{
		Argv:    []string{"sh", "-c", "echo installing; echo 'npm ERR! missing' >&2; exit 3"},
		Dir:     t.TempDir(),
		Timeout: time.Minute,
	})
	var se *SetupError
	if !errors.As(err, &se) || se.ExitCode != 3 || !strings.Contains(se.Reason, "exit code 3") {
		t.Fatalf("Run = %v, want a SetupError with exit code 3", err)
	}
	if !strings.Contains(err.Error(), "npm ERR! missing") {
		t.Fatalf("error %q does not quote the last output", err)
	}
}

func TestRunThatCannotStartSaysSo(t *testing.T) {
	err := Run(context.Background(), Command{Argv: []string{"/nonexistent/setup"}, Dir: t.TempDir(), Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("Run = %v, want could not start", err)
	}
}

func TestRunPastItsTimeoutEndsTheWholeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	err := Run(context.Background(), Command{
		// The child sleeps in the background and the shell waits for it:
		// killing the shell alone would leave the child running.
		Argv:    []string{"sh", "-c", "sleep 300 & echo $! > child.pid; echo started; wait"},
		Dir:     dir,
		Timeout: 500 * time.Millisecond,
	})
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Run took %v after a 500ms timeout", time.Since(start))
	}
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "ran longer than its timeout") {
		t.Fatalf("Run = %v, want a timeout SetupError", err)
	}
	awaitChildEnd(t, dir)
}

func TestWhatASetupLeftRunningInItsGroupEndsWithIt(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		wantExit     int // 0: success
	}{
		// The child holds the output open after the shell exits: Wait
		// reports ErrWaitDelay, yet the setup succeeded.
		{"success, child holds the output", "sleep 300 & echo $! > child.pid; echo started; exit 0", 0},
		// The child does not hold the output: only the group kill ends it.
		{"success, child detached from the output", "sleep 300 >/dev/null 2>&1 & echo $! > child.pid; exit 0", 0},
		{"failure", "sleep 300 >/dev/null 2>&1 & echo $! > child.pid; exit 4", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := Run(context.Background(), Command{Argv: []string{"sh", "-c", tc.script}, Dir: dir, Timeout: time.Minute})
			var se *SetupError
			if tc.wantExit == 0 && err != nil || tc.wantExit != 0 && (!errors.As(err, &se) || se.ExitCode != tc.wantExit) {
				t.Fatalf("Run = %v, want exit code %d", err, tc.wantExit)
			}
			awaitChildEnd(t, dir)
		})
	}
}

func TestACommandLineInAMessageQuotesTheWordsThatNeedIt(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"make", "down"}, `"make down"`},
		{[]string{"sh", "-c", "echo busy; exit 3"}, `"sh -c 'echo busy; exit 3'"`},
		{[]string{"sh", "-c", "echo it's"}, `"sh -c 'echo it'\''s'"`},
		{[]string{"npm", "run", "dev", "--", "--port=$CODEHYDRA_PORT"}, `"npm run dev -- '--port=$CODEHYDRA_PORT'"`},
		{[]string{"x", ""}, `"x ''"`},
	} {
		if got := commandLine(c.argv); got != c.want {
			t.Errorf("commandLine(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
}
