package opencode

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr puts an agent in its own process group (so that stopping it
// reaches its children too) and has the kernel send it SIGTERM when the
// thread that started it dies — see spawner for why that thread is
// long-lived.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// processCommandLine returns pid's command line with its arguments joined
// by spaces.
func processCommandLine(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimRight(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), " ")), nil
}
