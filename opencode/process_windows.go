package opencode

import (
	"errors"
	"os"
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

// groupAlive reports whether pid still runs.
func groupAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

// processGroup is the pid itself: an agent leads its group.
func processGroup(pid int) (int, error) { return pid, nil }

// processCommandLine is not available without extra APIs; ReapOrphans
// then never kills anything on Windows.
func processCommandLine(int) (string, error) {
	return "", errors.New("command lines are not readable on windows")
}

// liveMembers reports whether the process tree of pid still runs.
func liveMembers(pid int) bool { return groupAlive(pid) }
