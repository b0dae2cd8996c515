// Package testenv is shared support for the tests of CodeHydra's packages:
// a TestMain that keeps git and the app's files away from the machine, a
// log sink safe for concurrent writers, and the fault injections of the
// write-failure tests. Only tests import it.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"codehydra/internal/paths"
	"codehydra/internal/sandbox"
)

// machineEnv is the environment the tests started in, before Main moved
// HOME and XDG_* away from the machine.
var machineEnv = os.Environ()

// MachineEnv is the environment the test binary started in, before Main
// moved HOME and XDG_* away from the machine: the go tool needs it to
// find its build cache.
func MachineEnv() []string { return machineEnv }

// Isolate points every file of the app (HOME and XDG_*, the runtime
// folder too), git's global config, the display and the system bus at a
// fresh temp folder of t, which it returns.
func Isolate(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "HOME"} {
		dir := filepath.Join(base, strings.ToLower(v))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv(v, dir)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	// No system bus: an app under test whose agents work would otherwise
	// keep the machine awake (preventSleep); PrivateBus gives one.
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(base, "no-system-bus"))
	paths.Reload()
	return base
}

// inheritedGit are the variables that would point git at another
// repository or add configuration when the tests run inside a git hook.
var inheritedGit = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"}

// Main runs the tests of m isolated from the machine and returns their exit
// code, for TestMain: os.Exit(testenv.Main(m, "pkg-test-home-")). HOME and
// the XDG config, data and state folders go to a fresh temp folder named
// with prefix (removed afterwards); git reads no system and an empty global
// config, commits with a fixed identity, never prompts, and sees none of
// the inherited GIT_* variables that point at another repository. Before
// moving HOME and XDG_DATA_HOME it sets OpencodeEnv and ConformanceEnv,
// when unset, to the machine's opencode and conformance suite (see
// RealOpencode, ConformanceSuite), which it could not find after.
//
// A test binary started as the sandbox helper (a confined process the
// tests start through package proc) runs as one and does not return.
func Main(m *testing.M, prefix string) int {
	sandbox.RunHelperIfAsked()
	home, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	global := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(global, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(OpencodeEnv) == "" {
		os.Setenv(OpencodeEnv, machineOpencode())
	}
	if os.Getenv(ConformanceEnv) == "" {
		os.Setenv(ConformanceEnv, machineConformance())
	}
	for _, k := range inheritedGit {
		os.Unsetenv(k)
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, "config"),
		"XDG_DATA_HOME":       filepath.Join(home, "data"),
		"XDG_STATE_HOME":      filepath.Join(home, "state"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   global,
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		os.Setenv(k, v)
	}
	paths.Reload()
	return m.Run()
}

// SyncBuffer is a bytes.Buffer safe for writers in other goroutines (a
// command's output, slog handlers) while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test when timeout passes first. A cond may itself fail the test to stop
// waiting early (say, when the process it waits on has exited).
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !Poll(timeout, 5*time.Millisecond, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Poll calls cond every interval until it holds or timeout passes, and
// reports whether it held. It is WaitFor for the waits that must say more
// when they fail, poll an expensive cond less often, or run without a test
// (a helper process that a test started).
func Poll(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// Git runs git with args in dir ("" = the current folder) and returns its
// output, trimmed; a failure fails the test with git's own words.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// GitErr is Git for a command that may fail: its error carries git's own
// words.
func GitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// GitRepo makes a git repository named name in a new temp folder, on
// branch main with one commit ("initial commit", adding README.md with
// "hello\n"), and returns its path with symlinks resolved.
func GitRepo(t testing.TB, name string) string {
	t.Helper()
	parent, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, name)
	Git(t, "", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "README.md")
	Git(t, dir, "commit", "-q", "-m", "initial commit")
	return dir
}

// WriteFile writes content to the file at path (mode 0644), making its
// parent folders; a failure fails the test.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CommitFile writes content to the file name in the repository dir and
// commits it with message msg, returning the new HEAD.
func CommitFile(t testing.TB, dir, name, content, msg string) string {
	t.Helper()
	WriteFile(t, filepath.Join(dir, name), content)
	Git(t, dir, "add", "--", name)
	Git(t, dir, "commit", "-q", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}

// RequireFaultsEnv, set to 1 (make test does), turns the skip of a fault
// test that cannot make its fault here (ReadOnlyDir's, a folder of
// another user's) into a failure, so that make test cannot pass without
// those cases having run.
const RequireFaultsEnv = "CODEHYDRA_REQUIRE_FAULTS"

// CannotRun ends a test that cannot run on this machine: a skip, or a
// failure when the variable env is 1 (make test sets it), so that a
// missing tool or right cannot pass make test unseen.
func CannotRun(t testing.TB, env, format string, args ...any) {
	t.Helper()
	if os.Getenv(env) == "1" {
		t.Fatalf(format+" (and %s=1 forbids skipping)", append(args, env)...)
		return
	}
	t.Skipf(format, args...)
}

// RequirePythonEnv makes a missing python3 fail the tests that run a dev
// server with it (make test sets it).
const RequirePythonEnv = "CODEHYDRA_REQUIRE_PYTHON"

// NeedPython3 skips the test when python3 (whose http.server the tests'
// dev servers are) is not on the PATH, unless RequirePythonEnv forbids it.
func NeedPython3(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		CannotRun(t, RequirePythonEnv, "python3 is not installed (build/setup.sh installs it)")
	}
}

// FreePort returns a loopback port that was free a moment ago: for tests of
// code that must bind a given port, or must find nothing listening there.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WriteSettings writes content as the app's settings file.
func WriteSettings(t testing.TB, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(paths.SettingsFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.SettingsFile(), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ProcessesWith counts the live processes whose environment holds the
// line env ("NAME=value").
func ProcessesWith(t testing.TB, env string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc (Linux) to find processes by their environment; on Windows the job object ends them (internal/proc's tests)")
	}
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if bytes.Contains(stat, []byte(") Z ")) {
			continue
		}
		if slices.ContainsFunc(bytes.Split(data, []byte{0}), func(v []byte) bool { return string(v) == env }) {
			n++
		}
	}
	return n
}

// Exists says whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Symlink makes newname a symbolic link to oldname, or skips the test where
// the system says it did but made none: wine's CreateSymbolicLink is a stub
// that reports success (make test-windows).
func Symlink(t testing.TB, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(newname); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no symbolic links here: os.Symlink(%s) reported success but made none (wine's CreateSymbolicLink is a stub)", newname)
	}
}

// UnderWine reports whether the test runs under wine (make test-windows).
func UnderWine() bool { return underWine }

// WineSlack is how much longer than on Linux a wait may take under wine,
// where every program start (each git command) takes a second or more on a
// loaded machine, against milliseconds on Linux.
const WineSlack = 10

// Patient returns d, or under wine d×WineSlack: for a bound that says that
// something happens at all (a change the code missed never shows), not how
// fast; what is measured for speed is measured on Linux.
func Patient(d time.Duration) time.Duration {
	if underWine {
		return d * WineSlack
	}
	return d
}
