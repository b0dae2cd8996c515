//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// bridgeStdout takes this process's stdout for the bridge of a window
// process and points fd 1 at stderr, so that what C libraries print there
// (Mesa, GLFW, D-Bus) goes to the app's log instead of into the bridge.
func bridgeStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "bridge"), nil
}
