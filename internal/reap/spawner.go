package reap

import (
	"context"
	"os/exec"
	"runtime"
	"sync"
)

// Spawner starts children from one goroutine locked to its own OS thread.
// On Linux each child gets Pdeathsig so that it dies with the app even
// when the app is killed; but the kernel sends that signal when the
// *thread* that forked the child exits, not the process. Go may start a
// child from any thread and may retire threads (a goroutine that exits
// while locked takes its thread with it), which would kill children at
// random moments. Forking only from this long-lived locked thread ties
// Pdeathsig to the owner's lifetime: the thread ends only when the
// spawner is closed after every child is stopped, or when the app dies.
type Spawner struct {
	jobs   chan func()
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	closed error
}

// NewSpawner starts the spawner's thread. Starts asked for after Close
// fail with closed.
func NewSpawner(closed error) *Spawner {
	s := &Spawner{jobs: make(chan func()), quit: make(chan struct{}), done: make(chan struct{}), closed: closed}
	go s.loop()
	return s
}

func (s *Spawner) loop() {
	// Never unlocked: when loop returns, Go ends this thread instead of
	// reusing it, and the thread outliving no child is the point.
	runtime.LockOSThread()
	defer close(s.done)
	for {
		select {
		case job := <-s.jobs:
			job()
		case <-s.quit:
			return
		}
	}
}

// Run runs fn, which starts a child, on the spawner's thread and returns
// its error.
func (s *Spawner) Run(ctx context.Context, fn func() error) error {
	errc := make(chan error, 1)
	select {
	case s.jobs <- func() { errc <- fn() }:
		return <-errc
	case <-s.quit:
		return s.closed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start runs cmd.Start on the spawner's thread.
func (s *Spawner) Start(ctx context.Context, cmd *exec.Cmd) error {
	return s.Run(ctx, cmd.Start)
}

// Close ends the spawner's thread and waits for it. Children still
// running then get their Pdeathsig on Linux, so call it only after
// stopping them.
func (s *Spawner) Close() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}
