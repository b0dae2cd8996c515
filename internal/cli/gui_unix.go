//go:build unix

package cli

import (
	"os"
	"syscall"
)

// handOver replaces this process with the program at path, run with
// args: the same process (its pid, its terminal, its signals), so that a
// service manager or a terminal's Ctrl+C reaches the tray app itself.
func handOver(path string, args []string) (int, error) {
	return 1, syscall.Exec(path, append([]string{path}, args...), os.Environ())
}
