package inhibit

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/windows"
)

// On Windows the inhibitor is SetThreadExecutionState(ES_CONTINUOUS |
// ES_SYSTEM_REQUIRED), which keeps the system from idle sleep for as long
// as the thread that called it has not reset it, or has not ended. A
// goroutine locked to its own thread sets it and resets it.

const (
	esContinuous     = 0x80000000
	esSystemRequired = 0x00000001
)

func systemHolder(Options) holder {
	return threadState{set: windows.NewLazySystemDLL("kernel32.dll").NewProc("SetThreadExecutionState")}
}

type threadState struct{ set *windows.LazyProc }

// retells is false: Windows shows no reason for this request.
func (threadState) retells() bool { return false }

func (t threadState) hold(string) (func() error, error) {
	started := make(chan error, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// The state belongs to this thread. The goroutine never unlocks
		// it, so the thread ends with the goroutine, which drops the
		// state even if the reset below failed.
		runtime.LockOSThread()
		if r, _, err := t.set.Call(esContinuous | esSystemRequired); r == 0 {
			started <- fmt.Errorf("keep the system awake (SetThreadExecutionState): %w", err)
			return
		}
		started <- nil
		<-stop
		t.set.Call(esContinuous)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() error {
		close(stop)
		<-done
		return nil
	}, nil
}
