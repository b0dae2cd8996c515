package proc

import "syscall"

// sysProcAttr starts the process as the leader of a new process group
// and, when it is started from a reap.Spawner's thread (dieWithApp), has
// the kernel send it SIGTERM when that thread, which lives as long as
// CodeHydra, dies.
func sysProcAttr(dieWithApp bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if dieWithApp {
		a.Pdeathsig = syscall.SIGTERM
	}
	return a
}

// selfExe is this process's own binary, however it was started or
// replaced since.
func selfExe() string { return "/proc/self/exe" }
