package inhibit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"codehydra/internal/proc"
)

// On macOS the inhibitor is a `caffeinate -i -w <our pid>` (it ships
// with the system since 10.8): it holds a "prevent idle sleep" power
// assertion while it runs, and ends on its own when CodeHydra does, even
// when CodeHydra is killed. IOPMAssertionCreateWithName would need cgo and
// the macOS SDK, which the packages without Fyne do without, so that they
// build and vet from Linux (GOOS=darwin CGO_ENABLED=0).

func systemHolder(Options) holder { return caffeinate{pid: os.Getpid()} }

type caffeinate struct{ pid int }

// retells is false: caffeinate shows no reason, so a changed count of
// agents is not worth a new process.
func (caffeinate) retells() bool { return false }

func (c caffeinate) hold(string) (func() error, error) {
	p, err := proc.Start(context.Background(), proc.Options{
		Path: "/usr/bin/caffeinate",
		Args: []string{"-i", "-w", strconv.Itoa(c.pid)},
	})
	if err != nil {
		return nil, fmt.Errorf("keep the system awake with caffeinate: %w", err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return p.Stop(ctx, time.Second)
	}, nil
}
