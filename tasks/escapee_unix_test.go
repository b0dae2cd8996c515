//go:build unix

package tasks

import (
	"path/filepath"
	"syscall"
	"testing"

	"codehydra/tasks/taskstest"
)

// escapee is the pid of groupScript's child that left the group, which
// the test kills at its end in any case.
func escapee(t *testing.T, ws string, group int) int {
	t.Helper()
	pid := taskstest.PID(t, filepath.Join(ws, "escapee.pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid == group {
		t.Fatalf("the escapee's group is %d (%v): it did not leave the run's group %d", pgid, err, group)
	}
	return pid
}
