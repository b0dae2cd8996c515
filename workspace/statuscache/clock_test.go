package statuscache

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// fakeClock is a Clock that moves only when told: its timers fire when
// the test calls fire, its tickers never tick, and each Now is step later
// than the one before.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	clock         *fakeClock
	d             time.Duration
	f             func()
	stopped, done bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, d: d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return nil, func() {}
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	pending := !t.stopped && !t.done
	t.stopped = true
	return pending
}

func (c *fakeClock) setStep(d time.Duration) {
	c.mu.Lock()
	c.step = d
	c.mu.Unlock()
}

// pending returns the delays of the timers neither fired nor stopped.
func (c *fakeClock) pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if !t.stopped && !t.done {
			out = append(out, t.d)
		}
	}
	return out
}

// fire fires the pending timers.
func (c *fakeClock) fire() {
	c.mu.Lock()
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.done {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// TestTheDebounceRunsOnTheInjectedClockAndGrowsWithTheLastRefresh pins
// the debounce: a change arms a timer of the cache's clock (nothing
// refreshes before it fires), for 75 ms after a quick refresh and for the
// last refresh's duration, capped at 250 ms, after a slow one.
func TestTheDebounceRunsOnTheInjectedClockAndGrowsWithTheLastRefresh(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	m.clock = clock
	c := runCached(t, m)
	if st, err := m.Status(t.Context(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	// A rename into the worktree is one file-system event, so one change
	// arms one timer.
	outside := t.TempDir()
	// The warm-up refresh took no time on the clock.
	for i, tc := range []struct {
		wantDelay    time.Duration // the debounce of this change
		refreshTakes time.Duration // how long the clock says its refresh took
	}{
		{defaultDebounce, time.Second},
		{maxRefreshDelay, 100 * time.Millisecond},
		{100 * time.Millisecond, 0},
		{defaultDebounce, 0},
	} {
		tmp := filepath.Join(outside, "f")
		testenv.WriteFile(t, tmp, "x")
		if err := os.Rename(tmp, filepath.Join(ws.Path, "f"+string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, "the change to arm the debounce timer", soon, func() bool { return len(clock.pending()) > 0 })
		if got := clock.pending(); len(got) != 1 || got[0] != tc.wantDelay {
			t.Fatalf("change %d: pending timers %v, want one of %s", i, got, tc.wantDelay)
		}
		if _, fresh, _, _ := c.peek(ws.Path); fresh {
			t.Fatalf("change %d: the dirty flag is fresh before the debounce timer fired", i)
		}
		clock.setStep(tc.refreshTakes)
		clock.fire()
		testenv.WaitFor(t, "the refresh the timer started to end", soon, func() bool {
			st, fresh, _, _ := c.peek(ws.Path)
			return fresh && st.IsDirty && !c.refreshing(ws.Path)
		})
	}
}

// refreshing reports whether a refresh of the workspace at path is in
// flight.
func (c *cache) refreshing(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[path]
	return e != nil && e.running
}
