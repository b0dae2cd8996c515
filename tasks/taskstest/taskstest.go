// Package taskstest helps tests of task runs check that the processes a
// task started are gone.
package taskstest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// Alive reports a process that exists and is not a zombie (a zombie has
// ended; only its parent's wait is missing).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] != 'Z'
}

// PID waits for the pid file at path that a task writes and returns its
// number.
func PID(t testing.TB, path string) int {
	t.Helper()
	var pid int
	testenv.WaitFor(t, path, 15*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}
