package instance

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// holdLockEnv makes the test binary a helper process that takes the lock
// named by the variable, says "locked" and holds it until killed or its
// stdin closes.
const holdLockEnv = "CODEHYDRA_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		if _, err := Acquire(path); err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAcquireIsExclusiveUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "lock")
	first, err := Acquire(path)
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	if _, err := Acquire(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v, want ErrLocked", err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	third, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if err := third.Release(); err != nil {
		t.Fatal(err)
	}
	if err := third.Release(); err != nil {
		t.Fatalf("second Release = %v, want nil", err)
	}
}

func TestLockOfAKilledProcessIsFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Held open until the end of the test: the helper holds the lock until
	// its stdin closes or it is killed.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	for range 3 {
		if _, err := Acquire(path); !errors.Is(err, ErrLocked) {
			t.Fatalf("Acquire while another process holds the lock = %v, want ErrLocked", err)
		}
	}
	if !Alive(cmd.Process.Pid) {
		t.Fatal("lock holder died early")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	l.Release()
}

func TestWriteThenReadRoundTripsPrivately(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "codehydra")
	path := filepath.Join(dir, "instance.json")
	want := Info{PID: 42, MCPURL: "http://127.0.0.1:5000/mcp", MCPPort: 5000, Token: "abc",
		StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := Write(path, want); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if got != want {
		t.Fatalf("Read = %+v, want %+v", got, want)
	}
	modes := map[string]os.FileMode{path: 0o600, dir: 0o700}
	if runtime.GOOS == "windows" {
		modes = nil // no Unix modes there: the folder's ACL keeps it private (see EnsureDir)
	}
	for p, perm := range modes {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != perm {
			t.Errorf("%s mode %o, want %o", p, fi.Mode().Perm(), perm)
		}
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{`"pid"`, `"mcpUrl"`, `"mcpPort"`, `"token"`, `"startedAt"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("instance file lacks %s:\n%s", key, data)
		}
	}
}

func TestReadReportsMissingAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(filepath.Join(dir, "none.json")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Read of missing file = %v, want ErrNotRunning", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bad); err == nil || errors.Is(err, ErrNotRunning) {
		t.Fatalf("Read of bad file = %v, want a parse error", err)
	}
}

func TestRemoveDeletesAndToleratesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "instance.json")
	if err := Write(path, Info{PID: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := Remove(path); err != nil {
			t.Fatalf("Remove %d: %v", i, err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("instance file still there")
	}
}

func TestAlive(t *testing.T) {
	done := exec.Command(os.Args[0], "-test.run=^$")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), true},
		{"pid 0", 0, false},
		{"negative pid", -1, false},
		{"exited process", done.Process.Pid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Alive(tt.pid); got != tt.want {
				t.Fatalf("Alive(%d) = %v, want %v", tt.pid, got, tt.want)
			}
		})
	}
}

func TestWhereNamesPidAndMCPAddress(t *testing.T) {
	tests := []struct {
		pid  int
		url  string
		want string
	}{
		{7, "http://127.0.0.1:4711/mcp", "pid 7, MCP at http://127.0.0.1:4711/mcp"},
		{7, "", "pid 7, no MCP server"},
	}
	for _, tt := range tests {
		if got := (Info{PID: tt.pid, MCPURL: tt.url}).Where(); got != tt.want {
			t.Errorf("where(%d, %q) = %q, want %q", tt.pid, tt.url, got, tt.want)
		}
	}
}
