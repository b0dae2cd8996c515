//go:build unix && !linux

package opencode

import "syscall"

// sysProcAttr puts an agent in its own process group, so that stopping it
// reaches its children too. Without Pdeathsig (Linux only) agents outlive
// a crashed app (and ReapOrphans cannot prove them ours: see
// reap.MarkedMembers).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
