//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// leaveGroup makes c start in a session and process group of its own.
func leaveGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
