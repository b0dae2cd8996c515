package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/instance"
	"codehydra/internal/paths"
	"codehydra/internal/testenv"
)

// TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM runs the real program as a
// separate process, as a user or a service manager would.
func TestBuiltBinaryServesAndStopsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "codehydra")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	isolate(t)
	repo := gitRepo(t)
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

	deadline := time.Now().Add(30 * time.Second)
	var info instance.Info
	for {
		var err error
		if info, err = instance.Read(paths.InstanceFile()); err == nil {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("codehydra exited early: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no instance file after 30 s\nstderr:\n%s", &stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
