package opencode

import (
	"os/exec"
	"strconv"
	"syscall"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// sysProcAttr starts an agent in a new process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup ends the process tree of pid. Windows has no SIGTERM for
// console-less processes, so both signals end the tree at once.
func killGroup(pid int, _ signal) {
	if pid <= 0 {
		return
	}
	_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).Run()
}
