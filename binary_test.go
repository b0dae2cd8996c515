package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// appBuild is the codehydra binary, built once for the tests that run it
// as a separate process; TestMain removes it.
var appBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// builtApp returns the path of the codehydra binary, building it on the
// first call.
func builtApp(t *testing.T) string {
	t.Helper()
	appBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "codehydra-bin-")
		if err != nil {
			appBuild.err = err
			return
		}
		appBuild.dir, appBuild.path = dir, filepath.Join(dir, "codehydra")
		appBuild.err = goBuild(appBuild.path, ".")
	})
	if appBuild.err != nil {
		t.Fatal(appBuild.err)
	}
	return appBuild.path
}

// goBuild builds the package pkg into the executable out.
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = machineEnv
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM runs the real program as a
// separate process, as a user or a service manager would.
func TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := builtApp(t)
	isolate(t)
	repo := testenv.GitRepo(t, "repo")
	cmd := exec.Command(bin, "serve", "--project", repo)
	cmd.Env = os.Environ() // isolate's XDG_*, HOME and git settings
	var stdout, stderr testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	var info instance.Info
	testenv.WaitFor(t, "the instance file", 30*time.Second, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("codehydra exited early: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
		default:
		}
		var err error
		info, err = instance.Read(paths.InstanceFile())
		return err == nil
	})
	if info.PID != cmd.Process.Pid {
		t.Fatalf("instance file pid %d, want %d", info.PID, cmd.Process.Pid)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("codehydra did not exit cleanly: %v\nstderr:\n%s", err, &stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("codehydra did not stop within 30 s of SIGTERM\nstderr:\n%s", &stderr)
	}
	if fileExists(paths.InstanceFile()) {
		t.Fatal("instance file left after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr does not show the shutdown:\n%s", &stderr)
	}
}
