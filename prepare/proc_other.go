//go:build !unix

package prepare

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the command's process (its children may outlive it).
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
