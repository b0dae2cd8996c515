//go:build unix && !linux

package proc

import (
	"os"
	"syscall"
)

// sysProcAttr starts the process as the leader of a new session and so
// of a new process group, away from CodeHydra's terminal. Without
// Pdeathsig (Linux only) it outlives a crashed app until the next
// launch's reaper ends it.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// selfExe is this process's own binary.
func selfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}
