//go:build unix && !linux

package opencode

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts an agent in its own process group, so that stopping it
// reaches its children too. Without Pdeathsig (Linux only) agents outlive
// a crashed app (and ReapOrphans cannot prove them ours: see
// markedMembers).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processCommandLine returns pid's command line as ps shows it.
func processCommandLine(pid int) (string, error) {
	out, err := exec.Command("ps", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
