//go:build !linux && !darwin && !windows

package inhibit

import (
	"errors"
	"runtime"
)

func systemHolder(Options) holder { return unsupported{} }

// unsupported is a system whose sleep inhibitor CodeHydra does not know.
type unsupported struct{}

func (unsupported) retells() bool { return false }

func (unsupported) hold(string) (func() error, error) {
	return nil, errors.New("CodeHydra cannot keep " + runtime.GOOS + " awake")
}
