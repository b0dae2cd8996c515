//go:build unix

package gateway

import "syscall"

// killGroup ends what is left of the process group pgid, the group of a
// server that was its leader. A group that is gone is fine.
func killGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
