package gateway

import "syscall"

// sysProcAttr puts a server in its own process group (so that stopping it
// reaches what it started) and has the kernel end it when the thread that
// started it (the spawner's) dies with CodeHydra.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
