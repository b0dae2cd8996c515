package app

import (
	"context"
	"time"
)

// Hibernation stops a workspace's agent until something needs it and
// starts it again (docs/DESIGN.md "Hibernation"); the opencode supervisor
// implements it.
type Hibernation interface {
	// Hibernate stops the agent and records it hibernated.
	Hibernate(ctx context.Context, path string) error
	// Wake starts a hibernated agent and waits until it is ready.
	Wake(ctx context.Context, path string) error
	// Hibernated reports whether the agent is hibernated.
	Hibernated(path string) bool
}

// wakeTimeout bounds a wake the tray waits for: an agent's start is
// bounded by its ready timeout (30 s) and may wait for a start slot.
const wakeTimeout = 2 * time.Minute

// hibernateActions are *Hibernate* and *Wake*: each runs in the
// background and shows what failed under the item's name.
func (t *Tray) hibernateActions(a *Actions) {
	h := t.deps.Hibernation
	if h == nil {
		return
	}
	a.Hibernate = t.backgroundAction(LabelHibernate, wakeTimeout, h.Hibernate)
	a.Wake = t.backgroundAction(LabelWake, wakeTimeout, h.Wake)
}

// backgroundAction is an action on the workspace at path that runs fn in
// the background, for timeout at most, and shows what failed under label.
func (t *Tray) backgroundAction(label string, timeout time.Duration, fn func(ctx context.Context, path string) error) func(path string) {
	return func(path string) {
		t.background(func(life context.Context) {
			ctx, cancel := context.WithTimeout(life, timeout)
			defer cancel()
			// A timeout is shown; only the tray's end is not.
			if err := fn(ctx, path); err != nil && life.Err() == nil {
				t.do(func() { t.win.ShowError(label, err) })
			}
		})
	}
}

// withAgentServer runs fn, on the Fyne thread, with the port and password
// of the ready agent of path; a hibernated agent is woken first, in the
// background. label names the action in an error.
func (t *Tray) withAgentServer(label, path string, fn func(port int, password string)) {
	agents := t.deps.Agents
	now := func() {
		port, password, ok := agents.OpencodeServer(path)
		if !ok {
			t.win.ShowError(label, errAgentGone)
			return
		}
		fn(port, password)
	}
	h := t.deps.Hibernation
	if h == nil || !h.Hibernated(path) {
		now()
		return
	}
	t.background(func(life context.Context) {
		ctx, cancel := context.WithTimeout(life, wakeTimeout)
		defer cancel()
		if err := h.Wake(ctx, path); err != nil {
			// A timeout is shown; only the tray's end is not.
			if life.Err() == nil {
				t.do(func() { t.win.ShowError(label, err) })
			}
			return
		}
		t.do(now)
	})
}
