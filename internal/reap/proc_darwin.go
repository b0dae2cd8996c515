package reap

import (
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// statZombie is SZOMB of <sys/proc.h>, which x/sys/unix does not name.
const statZombie = 5

// BootID names this boot of the machine: pids and start times of another
// boot say nothing about the processes of this one.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}

// StartTime returns when the live process pid started, in microseconds
// since the epoch. With the boot id it tells a process from a later one
// that was given the same pid.
func StartTime(pid int) (uint64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return 0, errors.New("no such process")
	}
	tv := kp.Proc.P_starttime
	return uint64(tv.Sec)*1e6 + uint64(tv.Usec), nil
}

// groupOf is the process group of the live process pid.
func groupOf(pid int) (int, error) { return unix.Getpgid(pid) }

// environHas reports whether pid's environment holds the entry kv, read
// through KERN_PROCARGS2. An environment that cannot be read (another
// user's process, one that is gone) does not.
func environHas(pid int, kv string) bool {
	buf, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return false
	}
	return slices.Contains(procArgsEnviron(buf), kv)
}

// MarkedMembers returns the live processes of group pgid whose environment
// holds marker, this process never among them. macOS has no pidfd, so each
// process's start time is read before its environment and checked again
// after: a signal can then reach a stranger only if the checked process
// ends and its pid is given to another between that last check and the
// signal, a window of a few system calls. The caller releases them.
func MarkedMembers(pgid int, marker string) []*os.Process {
	if pgid <= 1 {
		return nil
	}
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return nil
	}
	return marked(kps, marker, func(kp unix.KinfoProc) bool { return kp.Eproc.Pgid == int32(pgid) })
}

// Marked returns the live processes of any group whose environment holds
// marker, this process never among them: also those that left the group
// of the child the marker was given to (setsid, a daemon). They are
// checked as in MarkedMembers. The caller releases them.
func Marked(marker string) []*os.Process {
	if marker == "" {
		return nil
	}
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	return marked(kps, marker, func(unix.KinfoProc) bool { return true })
}

// marked returns the live processes of kps that in says yes to and whose
// environment holds marker, this process never among them.
func marked(kps []unix.KinfoProc, marker string, in func(unix.KinfoProc) bool) []*os.Process {
	self := os.Getpid()
	var procs []*os.Process
	for _, kp := range kps {
		pid := int(kp.Proc.P_pid)
		if pid == self || !in(kp) || kp.Proc.P_stat == statZombie {
			continue
		}
		before, err := StartTime(pid)
		if err != nil || !environHas(pid, marker) {
			continue
		}
		if after, err := StartTime(pid); err != nil || after != before {
			continue
		}
		if p, err := os.FindProcess(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return procs
}
