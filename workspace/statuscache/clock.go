package statuscache

import "time"

// Clock is where the cache takes its time from: the debounce and retry
// timers, the periodic refresh of workspaces that cannot be watched, and
// how long a refresh took. Tests may replace it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker sends the time every d until stop is called.
	NewTicker(d time.Duration) (ticks <-chan time.Time, stop func())
}

// Timer is a timer of a Clock; *time.Timer is one.
type Timer interface {
	// Stop stops the timer; false means it already fired or was stopped.
	Stop() bool
}

// realClock is the Clock of package time.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
