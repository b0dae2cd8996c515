//go:build unix

package tasks

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the command the leader of a new process group.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends the command's whole process group SIGTERM, or SIGKILL
// when kill is set. A group that is gone already is no error.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
