//go:build !linux && !darwin

package reap

import (
	"errors"
	"os"
)

// BootID is unknown here, so that no record can be proven to be of this
// boot.
func BootID() string { return "" }

// StartTime is not read here (see MarkedMembers).
func StartTime(int) (uint64, error) {
	return 0, errors.New("process start times are read on Linux and macOS only")
}

// groupOf is not read here (see MarkedMembers).
func groupOf(int) (int, error) {
	return 0, errors.New("process groups are read on Linux and macOS only")
}

// MarkedMembers finds none. Without /proc or KERN_PROCARGS2 a process's
// environment, where a child's marker is, cannot be read cheaply (Windows
// keeps it in another process's memory) nor without racing pid reuse, and
// the reaper kills nothing that it cannot prove to be a child of ours. So
// here the children a crashed app left behind stay until the user ends
// them; Orphans drops their records and logs them.
func MarkedMembers(int, string) []*os.Process { return nil }

// Marked finds none, for the same reason as MarkedMembers.
func Marked(string) []*os.Process { return nil }
