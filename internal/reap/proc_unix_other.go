//go:build unix && !linux

package reap

import (
	"os/exec"
	"strconv"
	"strings"
)

// CommandLine returns pid's command line as ps shows it.
func CommandLine(pid int) (string, error) {
	out, err := exec.Command("ps", "-o", "command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
