// Package inhibit keeps the computer from going to sleep while agents
// work (settings preventSleep): a Guard holds the system's sleep
// inhibitor while any agent is busy or retrying and releases it when all
// are idle, and at Close. The inhibitor is the system's own: on Linux
// systemd-logind's (org.freedesktop.login1.Manager.Inhibit over the system
// D-Bus, what "sleep:idle"), on macOS a `caffeinate -i`, on Windows
// SetThreadExecutionState.
package inhibit

import (
	"fmt"
	"log/slog"
	"os"
	"time"
)

// DefaultSettle is how long the guard waits after a change before it
// looks at how many agents work: an agent that goes idle and busy again
// within it (a turn that ends and the next prompt) takes and releases
// nothing, and a state that flaps changes the inhibitor at most once per
// DefaultSettle.
const DefaultSettle = 2 * time.Second

// Options configure a Guard.
type Options struct {
	// Working counts the agents at work now (busy or retrying). The
	// guard calls it from its own goroutine, a settle time after a change.
	Working func() int
	// Settle is DefaultSettle when 0.
	Settle time.Duration
	// Getenv reads the environment (DBUS_SYSTEM_BUS_ADDRESS); nil is
	// os.Getenv.
	Getenv func(string) string
	// Logger (nil: discarded) hears when the inhibitor is taken and
	// released, and, once per guard, why it could not be taken.
	Logger *slog.Logger
}

// holder takes the system's inhibitor; the function it returns releases
// it.
type holder interface {
	hold(why string) (release func() error, err error)
	// retells reports that the system shows the reason (why), so that
	// a changed count of agents is worth a new inhibitor.
	retells() bool
}

// Guard holds the system's sleep inhibitor while agents work. Its methods
// are safe for concurrent use.
type Guard struct {
	working func() int
	settle  time.Duration
	log     *slog.Logger
	sys     holder

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	// The loop's own, never shared: the count the current inhibitor was
	// taken for (0: none), how to release it, and whether a failure has
	// been logged.
	held    int
	release func() error
	warned  bool
}

// New returns a guard over the system's inhibitor, and starts the
// goroutine that follows Changed until Close.
func New(o Options) *Guard {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return newGuard(o, systemHolder(o))
}

func newGuard(o Options, sys holder) *Guard {
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{
		working: o.Working,
		settle:  o.Settle,
		log:     o.Logger,
		sys:     sys,
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go g.run()
	return g
}

// Changed tells the guard that an agent's state may have changed; it
// looks again a settle time later. It never blocks.
func (g *Guard) Changed() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// Close releases the inhibitor, if held, and stops the guard. It may be
// called more than once.
func (g *Guard) Close() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	<-g.done
}

func (g *Guard) run() {
	defer close(g.done)
	var look <-chan time.Time
	for {
		select {
		case <-g.stop:
			if g.release != nil {
				g.drop()
				g.log.Info("the system may sleep again: CodeHydra stops")
			}
			return
		case <-g.kick:
			// Changes within the settle time are one: the first arms the
			// look, the others wait for it.
			if look == nil {
				look = time.After(g.settle)
			}
		case <-look:
			look = nil
			g.set(g.working())
		}
	}
}

// set holds the inhibitor for n working agents, or releases it for none.
func (g *Guard) set(n int) {
	switch {
	case n == g.held:
	case n == 0:
		g.drop()
		g.log.Info("the system may sleep again: no agent works")
	case g.held == 0 || g.sys.retells():
		release, err := g.sys.hold(reason(n))
		if err != nil {
			g.failed(err)
			return
		}
		// A new inhibitor before the old one goes, so that the system
		// is never left without one in between.
		g.drop()
		g.held, g.release = n, release
		g.log.Info("keeping the system awake while agents work", "agents", n)
	default:
		g.held = n
	}
}

// drop releases the inhibitor held, if any.
func (g *Guard) drop() {
	if g.release == nil {
		return
	}
	if err := g.release(); err != nil {
		g.log.Warn("releasing the sleep inhibitor", "err", err)
	}
	g.held, g.release = 0, nil
}

// failed reports that the inhibitor could not be taken: once as a
// warning, since a system without one (no logind, no system bus) fails
// every time, and the app works on without it.
func (g *Guard) failed(err error) {
	if g.warned {
		g.log.Debug("cannot keep the system awake", "err", err)
		return
	}
	g.warned = true
	g.log.Warn("cannot keep the system awake while agents work; it may sleep during their work (settings preventSleep)", "err", err)
}

// reason is what the system shows as the inhibitor's reason.
func reason(n int) string {
	if n == 1 {
		return "1 agent working"
	}
	return fmt.Sprintf("%d agents working", n)
}
