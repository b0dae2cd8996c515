//go:build unix

package opencode

import "syscall"

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
