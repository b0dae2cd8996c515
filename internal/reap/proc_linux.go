package reap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CommandLine returns pid's command line with its arguments joined by
// spaces.
func CommandLine(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " ")), nil
}

// BootID names this boot of the machine: pids and start times of another
// boot say nothing about the processes of this one.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStat is what the reaper needs of /proc/<pid>/stat.
type procStat struct {
	state byte
	pgrp  int
	// start is when the process started, in clock ticks since boot.
	start uint64
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid pgrp … starttime(22nd) …"; comm may hold
	// spaces and ")".
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: unexpected format", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// exited reports whether the process is dead (a zombie waits only for its
// parent to collect it, and no signal can end it).
func (st procStat) exited() bool { return st.state == 'Z' || st.state == 'X' }

var errProcessExited = errors.New("process has exited")

// groupOf is the process group of the live process pid.
func groupOf(pid int) (int, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return st.pgrp, nil
}

// StartTime returns when the live process pid started, in clock ticks
// since boot. With the boot id it tells a process from a later one that
// was given the same pid.
func StartTime(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	if st.exited() {
		return 0, errProcessExited
	}
	return st.start, nil
}

// environHas reports whether pid's environment holds the entry kv. An
// environment that cannot be read (another user's process, one that is
// gone) does not.
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// MarkedMembers returns the live processes of group pgid whose environment
// holds marker, this process never among them. Each is checked after it
// was opened (as a pidfd, on kernels since 5.3), so a signal sent through
// it reaches the process that was checked or, if that one is gone by then,
// nothing — never a stranger given its pid meanwhile. The caller releases
// them.
func MarkedMembers(pgid int, marker string) []*os.Process {
	if pgid <= 1 {
		return nil
	}
	return marked(marker, func(st procStat) bool { return st.pgrp == pgid })
}

// Marked returns the live processes of any group whose environment holds
// marker, this process never among them: also those that left the group
// of the child the marker was given to (setsid, a daemon). Each is checked
// after it was opened, as in MarkedMembers. The caller releases them.
func Marked(marker string) []*os.Process {
	if marker == "" {
		return nil
	}
	return marked(marker, func(procStat) bool { return true })
}

// marked returns the live processes that in says yes to and whose
// environment holds marker, this process never among them.
func marked(marker string, in func(procStat) bool) []*os.Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var procs []*os.Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if st, err := readProcStat(pid); err != nil || !in(st) || st.exited() {
			continue
		}
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || !in(st) || st.exited() || !environHas(pid, marker) {
			p.Release()
			continue
		}
		procs = append(procs, p)
	}
	return procs
}
