//go:build unix && !linux

package gateway

import "syscall"

// sysProcAttr puts a server in its own process group, so that stopping it
// reaches what it started.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
