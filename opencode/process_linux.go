package opencode

import (
	"bytes"
	"errors"
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

// bootID names this boot of the machine: pids and start times of another
// boot say nothing about the processes of this one.
func bootID() string {
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

// processStartTime returns when the live process pid started, in clock
// ticks since boot. With the boot id it tells a process from a later one
// that was given the same pid.
func processStartTime(pid int) (uint64, error) {
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

// markedMembers returns the live processes of group pgid whose environment
// holds marker, this process never among them. Each is checked after it
// was opened (as a pidfd, on kernels since 5.3), so a signal sent through
// it reaches the process that was checked or, if that one is gone by then,
// nothing — never a stranger given its pid meanwhile. The caller releases
// them.
func markedMembers(pgid int, marker string) []*os.Process {
	if pgid <= 1 {
		return nil
	}
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
		if st, err := readProcStat(pid); err != nil || st.pgrp != pgid || st.exited() {
			continue
		}
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.pgrp != pgid || st.exited() || !environHas(pid, marker) {
			p.Release()
			continue
		}
		procs = append(procs, p)
	}
	return procs
}

// listensOn reports whether one of the processes of group pgid that carry
// marker holds a listening socket on 127.0.0.1:port: the port an agent's
// output named is then its own, not another program's that would be sent
// the agent's password. known is false where that cannot be read.
func listensOn(pgid int, marker string, port int) (owned, known bool) {
	inodes, err := loopbackListeners(port)
	if err != nil {
		return false, false
	}
	if len(inodes) == 0 {
		return false, true
	}
	for _, p := range markedMembers(pgid, marker) {
		owned = owned || holdsSocket(p.Pid, inodes)
		p.Release()
	}
	return owned, true
}

// loopbackListeners returns the inodes of the sockets listening on
// 127.0.0.1:port, from /proc/net/tcp.
func loopbackListeners(port int) (map[string]bool, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[3] == "0A" {
			inodes[f[9]] = true
		}
	}
	return inodes, nil
}

// holdsSocket reports whether pid has a file descriptor on one of the
// socket inodes.
func holdsSocket(pid int, inodes map[string]bool) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}
