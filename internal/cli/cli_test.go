package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"codehydra/internal/daemon"
	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, "codehydra-cli-test-home-")) }

// isolate points every file of the app, git's global config and the display
// at a fresh temp folder.
func isolate(t *testing.T) string { return testenv.Isolate(t) }

// runCmd runs the core program in-process to the end.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut testenv.SyncBuffer
	code = Run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// noDisplayGUI is a GUI program's part of the command line on a machine
// without a display: its tray app says so at once, as app.Run does.
var noDisplayGUI = GUI{
	Tray: func(context.Context, daemon.UIParts) error {
		return fmt.Errorf("%w: no DISPLAY or WAYLAND_DISPLAY", daemon.ErrNoDisplay)
	},
}

// runGUI runs the GUI program (without a display) in-process to the end.
func runGUI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut testenv.SyncBuffer
	code = run(t.Context(), newCLI(&out, &errOut, &noDisplayGUI), args)
	return code, out.String(), errOut.String()
}

// running is a program started in the background.
type running struct {
	cancel         context.CancelFunc
	done           chan int
	stdout, stderr *testenv.SyncBuffer
}

func start(t *testing.T, args ...string) *running { return startWith(t, nil, args...) }

// startWith starts the program with gui: the GUI program's part, or nil
// for the core program.
func startWith(t *testing.T, gui *GUI, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{cancel: cancel, done: make(chan int, 1), stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}}
	go func() { r.done <- run(ctx, newCLI(r.stdout, r.stderr, gui), args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("program did not stop")
		}
	})
	return r
}

// stop cancels the program and returns its exit code.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("program did not stop\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		return -1
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, r *running, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, 20*time.Second, func() bool {
		if r != nil {
			select {
			case code := <-r.done:
				t.Fatalf("program exited with %d while waiting for %s\nstdout:\n%s\nstderr:\n%s", code, what, r.stdout, r.stderr)
			default:
			}
		}
		return cond()
	})
}

// waitRunning waits until r has announced itself.
func waitRunning(t *testing.T, r *running) {
	t.Helper()
	waitFor(t, "the app to announce itself", r, func() bool {
		return strings.Contains(r.stdout.String(), "CodeHydra is running")
	})
}

func TestServeWritesInstanceFileThatStatusSeesAndRemovesItOnStop(t *testing.T) {
	isolate(t)
	r := start(t, "serve")
	waitRunning(t, r)

	info, err := instance.Read(paths.InstanceFile())
	if err != nil {
		t.Fatalf("instance file: %v", err)
	}
	if info.PID != os.Getpid() || info.StartedAt.IsZero() {
		t.Fatalf("instance file = %+v, want this pid and a start time", info)
	}
	if fi, err := os.Stat(paths.InstanceFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("instance file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if config, err := os.ReadFile(paths.OpencodeConfigFile()); err != nil || !bytes.Contains(config, []byte(`"codehydra"`)) {
		t.Fatalf("OpenCode config %s = %q, %v; want the codehydra MCP entry", paths.OpencodeConfigFile(), config, err)
	}

	code, out, errOut := runCmd(t, "status", "--json")
	if code != 0 {
		t.Fatalf("status --json = %d\n%s%s", code, out, errOut)
	}
	var got instance.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	want := info
	if want.Token != "" {
		want.Token = redacted
	}
	if !got.StartedAt.Equal(want.StartedAt) {
		t.Fatalf("status startedAt %v, want %v", got.StartedAt, want.StartedAt)
	}
	got.StartedAt = want.StartedAt
	if got != want {
		t.Fatalf("status --json = %+v, want %+v", got, want)
	}

	code, out, _ = runCmd(t, "status")
	if code != 0 || !strings.Contains(out, "CodeHydra is running") {
		t.Fatalf("status = %d %q", code, out)
	}

	if code := r.stop(t); code != 0 {
		t.Fatalf("serve exited %d\n%s", code, r.stderr)
	}
	if testenv.Exists(paths.InstanceFile()) {
		t.Fatal("instance file left after stop")
	}
	l, err := instance.Acquire(paths.LockFile())
	if err != nil {
		t.Fatalf("lock still held after stop: %v", err)
	}
	l.Release()
	code, out, _ = runCmd(t, "status")
	if code != 1 || !strings.Contains(out, "CodeHydra is not running") {
		t.Fatalf("status after stop = %d %q", code, out)
	}
	logData, err := os.ReadFile(paths.LogFile())
	if err != nil || !strings.Contains(string(logData), "msg=running") || !strings.Contains(string(logData), "msg=stopped") {
		t.Fatalf("log %s = %q, %v; want start and stop recorded", paths.LogFile(), logData, err)
	}
}

func TestSecondInstanceSaysWhereTheFirstIsAndExitsZero(t *testing.T) {
	isolate(t)
	first := start(t, "serve")
	waitRunning(t, first)
	info, err := instance.Read(paths.InstanceFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve"}, {}} {
		code, out, errOut := runGUI(t, args...)
		want := "CodeHydra is already running (" + info.Where() + ")."
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("second instance %v = %d, stdout %q, stderr %q; want 0 and %q", args, code, out, errOut, want)
		}
	}
	if !testenv.Exists(paths.InstanceFile()) {
		t.Fatal("the second instance removed the first one's instance file")
	}
	if code := first.stop(t); code != 0 {
		t.Fatalf("first instance exited %d", code)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestServeGoesOnWithDefaultsWhenSettingsAreCorrupt(t *testing.T) {
	isolate(t)
	if err := os.MkdirAll(filepath.Dir(paths.SettingsFile()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.SettingsFile(), []byte(`{"mcpPort": "x"`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, "serve")
	waitRunning(t, r)
	if errOut := r.stderr.String(); !strings.Contains(errOut, "is not valid") || !strings.Contains(errOut, ".bad-") {
		t.Fatalf("stderr %q should report the corrupt file and where it went", errOut)
	}
	matches, _ := filepath.Glob(paths.SettingsFile() + ".bad-*")
	if len(matches) != 1 {
		t.Fatalf("moved-aside files = %v, want one", matches)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

func TestServeAddsProjectsAndReportsThoseItCannotAdd(t *testing.T) {
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	missing := filepath.Join(t.TempDir(), "nothing-here")
	r := start(t, "serve", "--project", repo, "--project", missing)
	waitRunning(t, r)
	if errOut := r.stderr.String(); !strings.Contains(errOut, "could not add project "+missing) {
		t.Fatalf("stderr %q should name the project that could not be added", errOut)
	}
	if out := r.stdout.String(); !strings.Contains(out, "1 project)") {
		t.Fatalf("stdout %q should count 1 project", out)
	}
	saved, err := settings.Load(paths.SettingsFile())
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Projects) != 1 || saved.Projects[0] != repo {
		t.Fatalf("saved projects = %v, want [%s]", saved.Projects, repo)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	again := start(t, "serve")
	waitRunning(t, again)
	if out := again.stdout.String(); !strings.Contains(out, "1 project)") {
		t.Fatalf("restart without --project: stdout %q should count the saved project", out)
	}
	if code := again.stop(t); code != 0 {
		t.Fatalf("second serve exited %d", code)
	}
}

// The default command is the tray app, which is the GUI program's: the
// core program hands it over to codehydra-gui beside it (the e2e GUI tests
// run that). Without it there, the core says where it looked and what to
// run instead, and starts nothing; its own flags are still checked first.
func TestTheCoresDefaultCommandWithoutTheGUIProgramSaysSoAndStartsNothing(t *testing.T) {
	isolate(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t)
	want := filepath.Join(filepath.Dir(exe), "codehydra-gui")
	if code != 1 || out != "" || !strings.Contains(errOut, want) || !strings.Contains(errOut, "make build") || !strings.Contains(errOut, "codehydra serve") {
		t.Fatalf("codehydra with no codehydra-gui beside = %d, stdout %q, stderr %q; want 1 and where it looked (%s), make build and codehydra serve", code, out, errOut, want)
	}
	if testenv.Exists(paths.InstanceFile()) || testenv.Exists(paths.SettingsFile()) {
		t.Fatal("the core started something without the GUI program")
	}
	if code, _, errOut := runCmd(t, "--no-such-flag"); code != 2 || strings.Contains(errOut, "codehydra-gui") {
		t.Fatalf("a bad flag = %d, stderr %q; want 2, from the core's own check", code, errOut)
	}
	// The windows are the GUI program's too.
	if code, _, errOut := runCmd(t, daemon.WindowCommand); code != 2 || !strings.Contains(errOut, "codehydra-gui's") {
		t.Fatalf("the core's %s = %d, stderr %q; want 2 and that the windows are codehydra-gui's", daemon.WindowCommand, code, errOut)
	}
}

func TestDefaultCommandWithoutDisplayRunsHeadless(t *testing.T) {
	isolate(t)
	r := startWith(t, &noDisplayGUI)
	waitFor(t, "the no-display notice", r, func() bool {
		return strings.Contains(r.stdout.String(), "No display found")
	})
	if !testenv.Exists(paths.InstanceFile()) {
		t.Fatal("no instance file while running headless")
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exited %d", code)
	}
}

func TestStatus(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	started := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	live := instance.Info{PID: os.Getpid(), MCPURL: "http://127.0.0.1:4711/mcp", MCPPort: 4711, Token: "s3cret", StartedAt: started}
	tests := []struct {
		name       string
		file       *instance.Info // nil = no instance file
		raw        string         // written instead of file when set
		args       []string
		wantCode   int
		wantOut    []string
		notOut     []string
		wantErrOut string
		unlocked   bool // the file names a live pid, but no one holds the lock
		plantedBy  int  // when set, the runtime folder and its files belong to this uid
	}{
		{name: "no instance file", args: nil, wantCode: 1, wantOut: []string{"CodeHydra is not running"}},
		{name: "no instance file, json", args: []string{"--json"}, wantCode: 1, wantErrOut: "CodeHydra is not running"},
		{name: "stale file of an exited process", file: &instance.Info{PID: exited.Process.Pid, MCPURL: live.MCPURL, MCPPort: live.MCPPort}, wantCode: 1, wantOut: []string{"CodeHydra is not running"}},
		// The review's planted runtime folder: another user made it (and
		// its files) first, naming their own server.
		{name: "a runtime folder of another user", file: &live, plantedBy: 65534, wantCode: 1,
			wantErrOut: "belongs to another user (uid 65534): it is not CodeHydra's", notOut: []string{"s3cret", "is running"}},
		{name: "an instance file naming another machine", file: &instance.Info{PID: os.Getpid(), MCPURL: "http://203.0.113.5:4711/mcp", MCPPort: 4711, Token: "s3cret"},
			wantCode: 1, wantErrOut: "not on this machine's loopback", notOut: []string{"s3cret", "is running"}},
		{name: "unreadable file", raw: "{", wantCode: 1, wantErrOut: "instance file"},
		{name: "a live pid without the lock (reused by another program)", file: &live, unlocked: true, wantCode: 1,
			wantOut: []string{"CodeHydra is not running"}, notOut: []string{"s3cret"}},
		{name: "human summary hides the token", file: &live, wantCode: 0,
			wantOut: []string{"CodeHydra is running", "pid:", itoa(os.Getpid()), "http://127.0.0.1:4711/mcp"}, notOut: []string{"s3cret"}},
		{name: "json redacts the token", file: &live, args: []string{"--json"}, wantCode: 0,
			wantOut: []string{`"token": "<redacted>"`, `"mcpPort": 4711`, `"mcpUrl": "http://127.0.0.1:4711/mcp"`, `"startedAt": "2025-03-04T05:06:07Z"`}, notOut: []string{"s3cret"}},
		{name: "human summary shows the token when asked", file: &live, args: []string{"--show-token"}, wantCode: 0,
			wantOut: []string{"token:       s3cret"}},
		{name: "json shows the token when asked", file: &live, args: []string{"--json", "--show-token"}, wantCode: 0,
			wantOut: []string{`"token": "s3cret"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			switch {
			case tt.file != nil:
				if err := instance.Write(paths.InstanceFile(), *tt.file); err != nil {
					t.Fatal(err)
				}
				if !tt.unlocked && tt.file.PID == os.Getpid() {
					holdLock(t)
				}
			case tt.raw != "":
				if err := instance.EnsureDir(paths.RuntimeDir()); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(paths.InstanceFile(), []byte(tt.raw), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.plantedBy != 0 {
				if os.Getuid() != 0 {
					testenv.CannotRun(t, testenv.RequireFaultsEnv, "giving a folder to another user needs root")
				}
				for _, p := range []string{paths.RuntimeDir(), paths.InstanceFile(), paths.LockFile()} {
					if err := os.Chown(p, tt.plantedBy, tt.plantedBy); err != nil {
						t.Fatal(err)
					}
				}
			}
			code, out, errOut := runCmd(t, append([]string{"status"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q lacks %q", out, w)
				}
			}
			for _, w := range tt.notOut {
				if strings.Contains(out+errOut, w) {
					t.Errorf("output shows %q:\n%s%s", w, out, errOut)
				}
			}
			if !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("stderr %q lacks %q", errOut, tt.wantErrOut)
			}
			if slicesContain(tt.args, "--json") && tt.wantCode == 0 {
				var v map[string]any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Errorf("--json output is not JSON: %v", err)
				}
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestCommandLineUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"unknown command", []string{"frobnicate"}, 2, "", "unknown command \"frobnicate\""},
		{"unknown command shows usage", []string{"frobnicate"}, 2, "", "Commands:"},
		{"top-level help", []string{"--help"}, 0, "Commands:", ""},
		{"top-level -h", []string{"-h"}, 0, "codehydra [--project PATH]", ""},
		{"help command", []string{"help"}, 0, "Commands:", ""},
		{"help of a command", []string{"help", "status"}, 0, "Usage: codehydra status", ""},
		{"serve help", []string{"serve", "--help"}, 0, "Usage: codehydra serve", ""},
		{"status help", []string{"status", "--help"}, 0, "--show-token", ""},
		{"version help", []string{"version", "--help"}, 0, "codehydra version", ""},
		{"version", []string{"version"}, 0, "codehydra " + Version + "\n", ""},
		{"bad flag", []string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"bad top-level flag", []string{"--bogus"}, 2, "", "Usage:"},
		{"stray argument", []string{"status", "extra"}, 2, "", "unexpected argument \"extra\""},
		{"empty project", []string{"serve", "--project", ""}, 2, "", "empty path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			code, out, errOut := runCmd(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("stdout %q (want %q), stderr %q (want %q)", out, tt.wantOut, errOut, tt.wantErr)
			}
			if testenv.Exists(paths.InstanceFile()) || testenv.Exists(paths.LockFile()) {
				t.Fatal("a usage error started the app")
			}
		})
	}
}

func TestPathListMakesPathsAbsolute(t *testing.T) {
	var p pathList
	if err := p.Set("rel/dir"); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if p[0] != filepath.Join(wd, "rel/dir") {
		t.Fatalf("Set(rel/dir) stored %q", p[0])
	}
	if err := p.Set(""); err == nil {
		t.Fatal("empty path accepted")
	}
}

// holdLock takes the single-instance lock until the test ends, as a running
// instance holds it.
func holdLock(t *testing.T) {
	t.Helper()
	l, err := instance.Acquire(paths.LockFile())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
}
