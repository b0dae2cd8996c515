//go:build unix

package opencode

import (
	"errors"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// killGroup signals the process group pgid (an agent is its group's
// leader, so pgid is its pid). A group that is already gone is fine.
func killGroup(pgid int, sig syscall.Signal) {
	if pgid <= 1 {
		return // never signal init's group or "every process"
	}
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether any process of group pgid still exists.
func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processGroup returns the process group of pid.
func processGroup(pid int) (int, error) { return syscall.Getpgid(pid) }
