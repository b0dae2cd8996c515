package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// appBuild is the codehydra binary and the GUI program beside it
// (codehydra-gui), built once for the tests that run them as separate
// processes; TestMain removes them.
var appBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// builtApp returns the path of the codehydra binary, building it and
// codehydra-gui beside it on the first call.
func builtApp(t *testing.T) string {
	t.Helper()
	appBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "codehydra-bin-")
		if err != nil {
			appBuild.err = err
			return
		}
		appBuild.dir, appBuild.path = dir, filepath.Join(dir, "codehydra")
		appBuild.err = goBuild(appBuild.path, "codehydra")
		if appBuild.err == nil {
			appBuild.err = goBuild(appBuild.path+"-gui", "codehydra/cmd/codehydra-gui")
		}
	})
	if appBuild.err != nil {
		t.Fatal(appBuild.err)
	}
	return appBuild.path
}

// goBuild builds the package pkg into the executable out, with the go
// command's flags if any.
func goBuild(out, pkg string, flags ...string) error {
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Env = testenv.MachineEnv()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// servedApp is the built binary running as a separate process.
type servedApp struct {
	cmd *exec.Cmd
	// exited receives cmd.Wait's result; a reader puts it back for the
	// cleanup that waits on it.
	exited         chan error
	stdout, stderr testenv.SyncBuffer
	// info is the instance file it wrote: its pid, MCP port and token.
	info instance.Info
}

// startServe runs the built binary's `serve` on repo in the environment
// isolate made (XDG_*, HOME and git settings), and returns once it has
// written its instance file. The process is killed at the end of the test.
func startServe(t *testing.T, bin, repo string) *servedApp {
	t.Helper()
	return startBuilt(t, bin, "serve", "--project", repo)
}

// startBuilt runs the built binary with args as startServe runs serve,
// and returns once it has written its instance file.
func startBuilt(t *testing.T, bin string, args ...string) *servedApp {
	t.Helper()
	app := &servedApp{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	app.cmd.Env = os.Environ()
	app.cmd.Stdout, app.cmd.Stderr = &app.stdout, &app.stderr
	if err := app.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { app.exited <- app.cmd.Wait() }()
	t.Cleanup(func() {
		_ = app.cmd.Process.Kill()
		<-app.exited
	})
	testenv.WaitFor(t, "the instance file", 30*time.Second, func() bool {
		app.exitedEarly(t)
		var err error
		app.info, err = instance.Read(paths.InstanceFile())
		return err == nil
	})
	return app
}

// exitedEarly fails the test if the app has exited.
func (app *servedApp) exitedEarly(t *testing.T) {
	t.Helper()
	select {
	case err := <-app.exited:
		app.exited <- err
		t.Fatalf("codehydra exited early: %v\nstdout:\n%s\nstderr:\n%s", err, &app.stdout, &app.stderr)
	default:
	}
}

// stop sends the app sig and waits up to 30 s for it to exit cleanly,
// leaving no instance file.
func (app *servedApp) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := app.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-app.exited:
		app.exited <- err
		if err != nil {
			t.Fatalf("codehydra did not exit cleanly: %v\nstderr:\n%s", err, &app.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("codehydra did not stop within 30 s of %v\nstderr:\n%s", sig, &app.stderr)
	}
	if testenv.Exists(paths.InstanceFile()) {
		t.Fatalf("instance file left after %v", sig)
	}
}

// TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM runs the real program as a
// separate process, as a user or a service manager would.
func TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := builtApp(t)
	isolate(t)
	t.Setenv("GOMAXPROCS", "") // serve's own setting, not the test's
	repo := testenv.GitRepo(t, "repo")
	app := startServe(t, bin, repo)
	if app.info.PID != app.cmd.Process.Pid {
		t.Fatalf("instance file pid %d, want %d", app.info.PID, app.cmd.Process.Pid)
	}
	// Start-up done, it settles on one P (internal/daemon/gc.go).
	testenv.WaitFor(t, "start-up to end on one P", 15*time.Second, func() bool {
		app.exitedEarly(t)
		return strings.Contains(app.stderr.String(), `msg="started up" gomaxprocs=1`)
	})

	app.stop(t, syscall.SIGTERM)
	if !strings.Contains(app.stderr.String(), "shutting down") {
		t.Errorf("stderr does not show the shutdown:\n%s", &app.stderr)
	}
}

// TestTheCoreHandsTheTrayAppToTheGUIProgramInTheSameProcess runs the
// built codehydra with no command, as a user starts the app: the core
// program links no GUI toolkit and hands over to codehydra-gui beside it
// by exec, so the app is the process the user started (its pid, its
// signals), now running the GUI program; without a display it runs
// headless, and stops cleanly on SIGINT.
func TestTheCoreHandsTheTrayAppToTheGUIProgramInTheSameProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the running program from /proc; Windows' hand-over runs in TestTheWindowsBuildServesUnderWine")
	}
	bin := builtApp(t)
	isolate(t) // no DISPLAY, no WAYLAND_DISPLAY
	repo := testenv.GitRepo(t, "repo")
	app := startBuilt(t, bin, "--project", repo)
	testenv.WaitFor(t, "the no-display notice", 30*time.Second, func() bool {
		app.exitedEarly(t)
		return strings.Contains(app.stdout.String(), "No display found")
	})
	if app.info.PID != app.cmd.Process.Pid {
		t.Errorf("the app runs as pid %d, want the process started (%d)", app.info.PID, app.cmd.Process.Pid)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", app.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(bin + "-gui")
	if err != nil {
		t.Fatal(err)
	}
	if exe != want {
		t.Errorf("the process runs %s, want the GUI program %s", exe, want)
	}
	app.stop(t, syscall.SIGINT)
}

// TestTheCoreRefusesATrayAppBuiltFromOtherSources: `make build` stamps
// both programs with a hash of their sources; a core rebuilt alone after
// a change must not hand over to the tray app of the old sources. The
// "tray app" here is a copy of the core with another stamp: the core
// refuses before it would run it.
func TestTheCoreRefusesATrayAppBuiltFromOtherSources(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	core := filepath.Join(t.TempDir(), "codehydra")
	build := func(out string, flags ...string) {
		if err := goBuild(out, "codehydra", flags...); err != nil {
			t.Fatal(err)
		}
	}
	build(core, "-ldflags=-X=codehydra/internal/cli.SourcesStamp=new")
	build(core+"-gui", "-ldflags=-X=codehydra/internal/cli.SourcesStamp=old")
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	for _, tc := range []struct{ gui, want string }{
		{"old", "from other sources: stamp old, this program's new"},
		{"", "it was built by hand, this program by make build"},
	} {
		if tc.gui == "" {
			build(core + "-gui")
		}
		cmd := exec.Command(core, "--project", repo)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "make build") {
			t.Errorf("the core with a tray app stamped %q: %v, stderr %q; want exit 1, %q and make build", tc.gui, err, &stderr, tc.want)
		}
		if testenv.Exists(paths.InstanceFile()) {
			t.Fatal("the core started the app anyway")
		}
	}
}
