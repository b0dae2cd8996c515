//go:build unix

// The teardowns of these tests are sh scripts.

package prepare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// newTeardownManager is a real Manager over a real repository whose
// deletes run teardown (the project's teardown command, read at each
// delete), with one workspace "feat" created through it.
func newTeardownManager(t *testing.T, teardown *settings.ProjectSetup) (*workspace.Manager, workspace.Workspace) {
	t.Helper()
	main := testenv.GitRepo(t, "proj")
	m := workspace.NewManager(workspace.Options{
		Projects:     []string{main},
		WorktreeRoot: t.TempDir(),
		Teardowns: NewTeardowns(TeardownOptions{
			Setup: func(string) settings.ProjectSetup { return *teardown },
		}),
	})
	ctx := context.Background()
	if err := m.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: main, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	return m, ws
}

func TestTheTeardownRunsInTheWorkspaceBeforeItsWorktreeIsRemoved(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record")
	// The teardown records, outside the workspace, its folder, its port
	// and whether the worktree's files were still there.
	ps := settings.ProjectSetup{Teardown: `sh -c "pwd > ` + record + `; echo port=$PORT >> ` + record + `; test -e .git && echo present >> ` + record + `"`}
	m, ws := newTeardownManager(t, &ps)
	if err := workspace.RecordPorts(ws.Path, workspace.PortBlock{First: 23450, Count: 5}); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("the teardown did not run: %v", err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Dir(ws.Path))
	want := filepath.Join(real, filepath.Base(ws.Path)) + "\nport=23450\npresent\n"
	if string(b) != want {
		t.Errorf("the teardown recorded %q, want %q (run in the workspace, with its port, before the removal)", b, want)
	}
	if _, err := os.Lstat(ws.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree is still there after the delete: %v", err)
	}
}

func TestAFailingTeardownKeepsTheWorkspaceAndSaysWhy(t *testing.T) {
	ps := settings.ProjectSetup{Teardown: `sh -c "echo containers still up >&2; exit 7"`}
	m, ws := newTeardownManager(t, &ps)
	err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{})
	var se *SetupError
	if !errors.Is(err, workspace.ErrTeardownFailed) || !errors.As(err, &se) || se.ExitCode != 7 {
		t.Fatalf("Delete = %v, want the teardown's failure with exit code 7", err)
	}
	if workspace.CodeOf(err) != workspace.CodeConflict || !strings.Contains(err.Error(), "containers still up") || !strings.Contains(err.Error(), "exit code 7") {
		t.Errorf("the error does not say why: code %s, %v", workspace.CodeOf(err), err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatalf("the worktree was touched: %v", err)
	}
	list, _ := m.Workspaces(ws.ProjectPath)
	if len(list) != 1 || list[0].Path != ws.Path {
		t.Fatalf("workspaces after the failed delete: %+v", list)
	}

	// Forced, it still runs the teardown, and deletes in spite of it.
	if err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{Force: true}); err != nil {
		t.Fatalf("a forced delete failed: %v", err)
	}
	if _, err := os.Lstat(ws.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the forced delete left the worktree: %v", err)
	}
}

func TestATeardownThatCannotStartKeepsTheWorkspace(t *testing.T) {
	ps := settings.ProjectSetup{Teardown: "/nonexistent/teardown-program"}
	m, ws := newTeardownManager(t, &ps)
	err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{})
	if !errors.Is(err, workspace.ErrTeardownFailed) || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("Delete = %v, want a teardown that could not start", err)
	}
	if _, err := os.Stat(ws.Path); err != nil {
		t.Fatalf("the workspace went: %v", err)
	}
}

func TestATeardownPastItsTimeoutIsKilledWithItsWholeGroupAndKeepsTheWorkspace(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The teardown starts a grandchild that would outlive it, and hangs.
	ps := settings.ProjectSetup{Teardown: `sh -c "sleep 300 & echo $! > ` + pidFile + `; wait"`, TeardownTimeoutSeconds: 1}
	m, ws := newTeardownManager(t, &ps)
	start := time.Now()
	err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{})
	if !errors.Is(err, workspace.ErrTeardownFailed) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("Delete = %v, want the teardown stopped at its timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the delete took %v with a 1 s teardown timeout", d)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil || pid <= 0 {
		t.Fatalf("pid file %q", b)
	}
	testenv.WaitFor(t, "the teardown's grandchild gone", 10*time.Second, func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	if _, err := os.Stat(filepath.Join(ws.Path, ".git")); err != nil {
		t.Fatalf("the workspace went: %v", err)
	}
}

func TestAProjectWithoutTeardownDeletesAsBefore(t *testing.T) {
	ps := settings.ProjectSetup{Setup: "true"}
	m, ws := newTeardownManager(t, &ps)
	if err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
