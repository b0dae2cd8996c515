package gateway

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// spawner runs the starts of stdio servers on one OS thread that lives as
// long as the gateway. On Linux each server gets Pdeathsig so that it dies
// with CodeHydra even when CodeHydra is killed; the kernel sends that
// signal when the thread that forked the child ends, and Go may retire a
// thread (a locked goroutine that exits takes its thread along), which
// would kill servers at random moments. The same reasoning as opencode's
// spawner, for the same kind of child.
type spawner struct {
	jobs chan func()
	quit chan struct{}
	once sync.Once
}

func newSpawner() *spawner {
	s := &spawner{jobs: make(chan func()), quit: make(chan struct{})}
	go func() {
		// Never unlocked, so that Go ends the thread with the loop.
		runtime.LockOSThread()
		for {
			select {
			case job := <-s.jobs:
				job()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

var errGatewayClosed = errors.New("the gateway is closed")

// run runs fn on the spawner's thread and returns its error.
func (s *spawner) run(ctx context.Context, fn func() error) error {
	errc := make(chan error, 1)
	select {
	case s.jobs <- func() { errc <- fn() }:
		return <-errc
	case <-s.quit:
		return errGatewayClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close ends the thread: servers still running then get their Pdeathsig,
// so call it after stopping them.
func (s *spawner) close() { s.once.Do(func() { close(s.quit) }) }
