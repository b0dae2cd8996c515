package opencode

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts an agent in its own process group (so that stopping it
// reaches its children too) and has the kernel send it SIGTERM when the
// thread that started it dies — see spawner for why that thread is
// long-lived.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// processCommandLine returns pid's command line with its arguments joined
// by spaces.
func processCommandLine(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " ")), nil
}

// liveMembers reports whether group pgid has a process that is not a
// zombie (a dead process its parent has not collected yet, which no signal
// can end).
func liveMembers(pgid int) bool {
	if !groupAlive(pgid) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp …"; comm may hold spaces and ")".
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		if fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}
