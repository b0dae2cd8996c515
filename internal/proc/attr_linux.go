package proc

import "syscall"

// sysProcAttr starts the process as the leader of a new session (and so
// of a new process group, which the tree's signals go to), away from any
// terminal CodeHydra was started from, which a confined process could
// otherwise type into; when it is started from a reap.Spawner's thread
// (dieWithApp), the kernel sends it SIGTERM when that thread, which lives
// as long as CodeHydra, dies.
func sysProcAttr(dieWithApp bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true}
	if dieWithApp {
		a.Pdeathsig = syscall.SIGTERM
	}
	return a
}

// selfExe is this process's own binary, however it was started or
// replaced since.
func selfExe() string { return "/proc/self/exe" }
