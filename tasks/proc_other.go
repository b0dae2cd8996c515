//go:build !unix

package tasks

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// signalGroup kills the command's process (its children may outlive it:
// there are no process groups to end them with).
func signalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }
