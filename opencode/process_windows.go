package opencode

import (
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/windows"

	"codehydra/internal/childjob"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// sysProcAttr starts an agent in a new process group and without a console
// window of its own (CodeHydra is a tray app; opencode.cmd's cmd.exe would
// otherwise open one). That the agent dies with the app is childjob's work.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		HideWindow:    true,
	}
}

// killGroup ends the process tree of pid. Windows has no SIGTERM for
// console-less processes, so both signals end the tree at once. It is also
// called after the agent was waited for, when pid may be a stranger's:
// only a process in CodeHydra's job is ended. What an agent that exited
// left behind stays until the app ends, when the job ends it.
func killGroup(pid int, _ signal) {
	if pid <= 0 || !childjob.Holds(pid) {
		return
	}
	_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid)).Run()
}
