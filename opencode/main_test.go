//go:build unix

package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/sandbox"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// fakeBin is the fake opencode built for this test run.
var fakeBin string

func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked()
	if os.Getenv(crashingAppEnv) != "" {
		runCrashingApp()
		return
	}
	dir, err := os.MkdirTemp("", "fakeopencode-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Named "opencode" so that orphan reaping recognises it.
	fakeBin = filepath.Join(dir, "opencode")
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the tests build a fake opencode and need the go tool on PATH:", err)
		os.Exit(1)
	}
	out, err := exec.Command(gobin, "build", "-o", fakeBin, "codehydra/opencode/internal/fakeopencode").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build fake opencode: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testLogger writes the supervisor's log into the test's log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// changes records OnChange calls and, once the fixture started a
// supervisor, the status each call announces, read in the callback as the
// tray reads it.
type changes struct {
	ch  chan string
	sup atomic.Pointer[Supervisor]

	mu   sync.Mutex
	seen map[string][]workspace.AgentStatus
}

func newChanges() *changes {
	return &changes{ch: make(chan string, 1024), seen: map[string][]workspace.AgentStatus{}}
}

func (c *changes) onChange(path string) {
	if s := c.sup.Load(); s != nil {
		st := s.AgentStatus(path)
		c.mu.Lock()
		c.seen[path] = append(c.seen[path], st)
		c.mu.Unlock()
	}
	select {
	case c.ch <- path:
	default:
	}
}

// published returns the statuses announced for path so far, oldest first.
func (c *changes) published(path string) []workspace.AgentStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]workspace.AgentStatus(nil), c.seen[path]...)
}

// fixture is a supervisor over the fake opencode with its own folders.
type fixture struct {
	t         *testing.T
	dir       string
	agentsDir string
	config    string
	env       []string
	changes   *changes
	// mcp is the MCP server the agents connect to; it takes the token
	// "tok-1".
	mcp *testMCP
}

func newFixture(t *testing.T, env ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{
		t:         t,
		dir:       dir,
		agentsDir: filepath.Join(dir, "agents"),
		config:    filepath.Join(dir, "codehydra-mcp.json"),
		changes:   newChanges(),
		mcp:       startTestMCP(t, "tok-1"),
		env:       append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "FAKEOC_HEARTBEAT=1s"}, env...),
	}
	if err := WriteConfig(f.config); err != nil {
		t.Fatal(err)
	}
	return f
}

// options are fast defaults for tests; adjust before calling start.
func (f *fixture) options() SupervisorOptions {
	return SupervisorOptions{
		Bin:           fakeBin,
		ConfigPath:    f.config,
		MCPPort:       func() int { return f.mcp.port },
		MCPToken:      func(string) string { return "tok-1" },
		OnChange:      f.changes.onChange,
		Logger:        testLogger(f.t),
		Env:           f.env,
		AgentsDir:     f.agentsDir,
		ToolsDir:      filepath.Join(f.dir, "tools"),
		LookPath:      func(string) (string, error) { return "", exec.ErrNotFound },
		ReadyTimeout:  10 * time.Second,
		StopTimeout:   2 * time.Second,
		PollInterval:  10 * time.Millisecond,
		BackoffMin:    20 * time.Millisecond,
		BackoffMax:    80 * time.Millisecond,
		HealthyAfter:  time.Minute,
		CrashWindow:   time.Minute,
		EventRetryMin: 10 * time.Millisecond,
		EventRetryMax: 50 * time.Millisecond,
		EventIdle:     5 * time.Second,
	}
}

func (f *fixture) start(o SupervisorOptions) *Supervisor {
	f.t.Helper()
	s := NewSupervisor(o)
	f.changes.sup.Store(s)
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.StopAll(ctx); err != nil {
			f.t.Errorf("StopAll: %v", err)
		}
	})
	return s
}

// workspace makes a folder to run an agent in.
func (f *fixture) workspace(name string) workspace.Workspace {
	f.t.Helper()
	p := filepath.Join(f.dir, "ws", name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		f.t.Fatal(err)
	}
	return workspace.Workspace{Name: name, Branch: name, Path: p, ProjectPath: filepath.Join(f.dir, "project")}
}

// waitState waits until the agent of ws is in state.
func waitState(t testing.TB, s *Supervisor, ws string, state workspace.AgentState, timeout time.Duration) workspace.AgentStatus {
	t.Helper()
	var st workspace.AgentStatus
	testenv.WaitFor(t, fmt.Sprintf("agent state %q", state), timeout, func() bool {
		st = s.AgentStatus(ws)
		return st.State == state
	})
	return st
}

// connectRequests is how many POST /mcp/codehydra/connect the fake
// opencode on port got.
func connectRequests(t testing.TB, port int) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/fake/connect-requests", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// emit makes the fake opencode on port send an event.
func emit(t testing.TB, port int, silent bool, typ string, props any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "properties": props})
	if err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("http://127.0.0.1:%d/fake/emit", port)
	if silent {
		u += "?silent=1"
	}
	resp, err := http.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("emit %s: %s", typ, resp.Status)
	}
}

// processGone reports whether pid no longer runs (a zombie counts as gone:
// it is dead and only waits for its parent to collect it).
func processGone(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		// No /proc (macOS): ask the kernel; zombies then count as running.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func readPID(t testing.TB, file string) int {
	t.Helper()
	var pid int
	testenv.WaitFor(t, "pid file "+file, 10*time.Second, func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil && pid > 0
	})
	return pid
}
