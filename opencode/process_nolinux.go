//go:build !linux && !darwin

package opencode

import (
	"errors"
	"os"
)

// bootID is unknown here, so that no agent record can be proven to be of
// this boot.
func bootID() string { return "" }

// processStartTime is not read here (see markedMembers).
func processStartTime(int) (uint64, error) {
	return 0, errors.New("process start times are read on Linux only")
}

// markedMembers finds none. Without /proc a process's environment, where
// an agent's marker is, cannot be read cheaply (macOS has it behind
// sysctl KERN_PROCARGS2, Windows in another process's memory) nor without
// racing pid reuse, and the reaper kills nothing that it cannot prove to
// be an agent of ours. So here the agents a crashed app left behind stay
// until the user ends them; ReapOrphans drops their records and logs
// them.
func markedMembers(int, string) []*os.Process { return nil }

// listensOn cannot tell here which process holds a port (known false);
// the agent's port is then taken from its listening line alone.
func listensOn(int, string, int) (owned, known bool) { return false, false }
