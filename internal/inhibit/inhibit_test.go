//go:build linux

package inhibit

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// The guard against a stand-in systemd-logind on a private bus (package
// testenv): the inhibitor it takes is the descriptor that stand-in hands
// out, and a release is every copy of it closed, as logind sees it.

const settle = 50 * time.Millisecond

// agents are the working agents a test sets, and how often the guard
// looked at them.
type agents struct{ n, looks atomic.Int64 }

func (a *agents) count() int {
	a.looks.Add(1)
	return int(a.n.Load())
}

// set sets the count, tells g, and waits until g has looked at it.
func (a *agents) set(t *testing.T, g *Guard, n int) {
	t.Helper()
	before := a.looks.Load()
	a.n.Store(int64(n))
	g.Changed()
	testenv.WaitFor(t, "the guard to look", 10*time.Second, func() bool { return a.looks.Load() > before })
}

// guardOn starts a guard over the logind of the bus at addr, counting
// working agents, logging to log at debug level.
func guardOn(t *testing.T, addr string, working *agents, log *testenv.SyncBuffer) *Guard {
	t.Helper()
	g := New(Options{
		Working: working.count,
		Settle:  settle,
		Getenv: func(k string) string {
			if k == "DBUS_SYSTEM_BUS_ADDRESS" {
				return addr
			}
			return ""
		},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	t.Cleanup(g.Close)
	return g
}

// servedGuard starts a guard over a stand-in logind that answers.
func servedGuard(t *testing.T) (*testenv.Logind, *agents, *testenv.SyncBuffer, *Guard) {
	t.Helper()
	addr := testenv.PrivateBus(t)
	l := testenv.WatchLogind(t, addr)
	l.Serve(t)
	working, log := &agents{}, &testenv.SyncBuffer{}
	return l, working, log, guardOn(t, addr, working, log)
}

func waitHeld(t *testing.T, l *testenv.Logind, why string) {
	t.Helper()
	testenv.WaitFor(t, "an inhibitor held for "+why, 10*time.Second, func() bool {
		held := l.Held()
		return len(held) == 1 && held[0] == testenv.Inhibitor{What: "sleep:idle", Who: "CodeHydra", Why: why, Mode: "block"}
	})
}

func TestTheInhibitorIsHeldWhileAgentsWorkAndReleasedWhenAllAreIdle(t *testing.T) {
	l, working, log, g := servedGuard(t)

	working.set(t, g, 2)
	waitHeld(t, l, "2 agents working")

	// One fewer: a new inhibitor says so, and the old one goes.
	working.set(t, g, 1)
	waitHeld(t, l, "1 agent working")
	if ins := l.Inhibitors(); len(ins) != 2 || !ins[0].Released {
		t.Fatalf("inhibitors %+v, want the first released and a second", ins)
	}

	working.set(t, g, 0)
	testenv.WaitFor(t, "every inhibitor released", 10*time.Second, func() bool { return len(l.Held()) == 0 })
	if n := len(l.Inhibitors()); n != 2 {
		t.Fatalf("%d inhibitors taken, want 2", n)
	}
	for _, want := range []string{"keeping the system awake while agents work", "the system may sleep again"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestCloseReleasesTheInhibitor(t *testing.T) {
	l, working, log, g := servedGuard(t)
	working.set(t, g, 1)
	waitHeld(t, l, "1 agent working")

	g.Close()
	testenv.WaitFor(t, "the inhibitor released at Close", 10*time.Second, func() bool { return len(l.Held()) == 0 })
	if !strings.Contains(log.String(), "the system may sleep again: CodeHydra stops") {
		t.Errorf("the log does not say why the inhibitor went:\n%s", log)
	}
	g.Close() // again: nothing left to do
	g.Changed()
	time.Sleep(4 * settle) // a guard still looking would take one now
	if n := len(l.Inhibitors()); n != 1 {
		t.Fatalf("%d inhibitors after Close and a change, want 1", n)
	}
}

func TestAFlappingStateChangesTheInhibitorAtMostOncePerSettleTime(t *testing.T) {
	l, working, _, g := servedGuard(t)

	// Busy and idle again within the settle time: nothing is taken.
	working.n.Store(1)
	g.Changed()
	working.set(t, g, 0)
	if n := l.Calls(); n != 0 {
		t.Fatalf("%d Inhibit calls for a busy spell shorter than the settle time, want 0", n)
	}

	// A state that flaps every millisecond for 20 settle times: without
	// the settle time that would be hundreds of inhibitors.
	const spell = 20 * settle
	start := time.Now()
	changes := 0
	for i := 0; time.Since(start) < spell; i++ {
		working.n.Store(int64(i % 2))
		g.Changed()
		changes++
		time.Sleep(time.Millisecond)
	}
	working.set(t, g, 0)
	testenv.WaitFor(t, "every inhibitor released", 10*time.Second, func() bool { return len(l.Held()) == 0 })
	looks := int(time.Since(start)/settle) + 1
	if n := l.Calls(); n > looks || n == 0 {
		t.Fatalf("%d Inhibit calls for %d changes over %d settle times, want 1 to %d", n, changes, looks-1, looks)
	}
}

func TestAMissingLogindIsLoggedOnceAndTheGuardGoesOn(t *testing.T) {
	addr := testenv.PrivateBus(t)
	l := testenv.WatchLogind(t, addr) // nobody owns org.freedesktop.login1
	var working agents
	var log testenv.SyncBuffer
	g := guardOn(t, addr, &working, &log)

	for want := 1; want <= 3; want++ {
		working.set(t, g, want)
		testenv.WaitFor(t, fmt.Sprintf("Inhibit call %d", want), 10*time.Second, func() bool { return l.Calls() >= want })
	}
	// The last failure's debug line comes after its call.
	testenv.WaitFor(t, "the third failure logged at debug level", 10*time.Second, func() bool {
		return strings.Count(log.String(), "level=DEBUG msg=\"cannot keep the system awake\"") == 2
	})
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), "org.freedesktop.login1 was not provided") {
		t.Fatalf("%d warnings, want 1 naming the unknown service:\n%s", n, &log)
	}

	// logind comes: the next change takes the inhibitor.
	l.Serve(t)
	working.set(t, g, 1)
	waitHeld(t, l, "1 agent working")
}

func TestNoSystemBusIsLoggedOnce(t *testing.T) {
	addr := "unix:path=" + filepath.Join(t.TempDir(), "no-bus")
	var working agents
	var log testenv.SyncBuffer
	g := guardOn(t, addr, &working, &log)
	for want := 1; want <= 2; want++ {
		working.set(t, g, want)
		testenv.WaitFor(t, fmt.Sprintf("failure %d logged", want), 10*time.Second, func() bool {
			return strings.Count(log.String(), "cannot keep the system awake") == want
		})
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), "connect to the system bus at "+addr) {
		t.Fatalf("%d warnings, want 1 naming the bus:\n%s", n, &log)
	}
}

// recorder is a system whose inhibitor shows no reason (macOS's
// caffeinate, Windows' thread state), which this machine cannot run.
type recorder struct{ taken, released atomic.Int64 }

func (*recorder) retells() bool { return false }

func (r *recorder) hold(string) (func() error, error) {
	r.taken.Add(1)
	return func() error { r.released.Add(1); return nil }, nil
}

func TestWhereTheSystemShowsNoReasonACountChangeTakesNoNewInhibitor(t *testing.T) {
	var working agents
	r := &recorder{}
	g := newGuard(Options{Working: working.count, Settle: settle}, r)
	for _, n := range []int{1, 3, 2} {
		working.set(t, g, n)
	}
	g.Close() // its last look is done, and it releases
	if r.taken.Load() != 1 || r.released.Load() != 1 {
		t.Fatalf("taken %d, released %d; want 1 and 1", r.taken.Load(), r.released.Load())
	}
}
