//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// Supported reports whether this system has a sandbox at all: not here
// (macOS's sandbox-exec and Windows' AppContainer are not used yet).
const Supported = false

// notSupported is the reason given on systems without a sandbox.
const notSupported = "not confined: not supported on this system"

// Probe says that this system cannot confine processes.
func Probe() Status { return Status{Reason: notSupported} }

func confineAndExec(Policy, string, []string, *os.File) (Status, error) {
	return Status{}, errors.New(notSupported)
}
