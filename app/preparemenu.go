package app

import (
	"context"
	"errors"
	"strings"

	"fyne.io/fyne/v2"

	"codehydra/prepare"
)

// The tray's items for a workspace whose setup failed. They are stable:
// tests drive the tray over D-Bus by these strings.
const (
	LabelRetrySetup  = "Retry setup"
	LabelStartAnyway = "Start agent anyway"
)

// PrepareActions answer a failed setup from the tray: the New workspace
// window offers the same, but it may be closed, and a workspace created
// over MCP never had one. A nil action leaves its item disabled.
type PrepareActions struct {
	RetrySetup  func(path string)
	StartAnyway func(path string)
}

// setupItems head the submenu of a workspace whose setup failed: why, the
// last line the setup wrote, and the user's two ways on. They replace the
// agent's trouble line, which would repeat the reason behind a long
// preamble and cut it off. None for any other workspace.
func setupItems(w WorkspaceState, a Actions) []*fyne.MenuItem {
	if w.SetupFailed == "" || w.Deleting {
		return nil
	}
	why, last, _ := strings.Cut(w.SetupFailed, "\n")
	items := []*fyne.MenuItem{disabled("⚠ " + oneMenuLine(why))}
	if last != "" {
		items = append(items, disabled("    "+oneMenuLine(last)))
	}
	path := w.Workspace.Path
	var retry, anyway func()
	if a.RetrySetup != nil {
		retry = func() { a.RetrySetup(path) }
	}
	if a.StartAnyway != nil {
		anyway = func() { a.StartAnyway(path) }
	}
	return append(items,
		actionItem(LabelRetrySetup, retry),
		actionItem(LabelStartAnyway, anyway),
		fyne.NewMenuItemSeparator())
}

// setupFailed is what the tray keeps of a failed setup (WorkspaceState's
// SetupFailed): its reason, and on a second line the last line of its
// output; "" when the workspace's setup did not fail.
func (t *Tray) setupFailed(path string) string {
	if t.deps.Prepare == nil {
		return ""
	}
	st, ok := t.deps.Prepare.State(path)
	if !ok || st.Phase != prepare.PhaseFailed {
		return ""
	}
	var se *prepare.SetupError
	if !errors.As(st.Err, &se) {
		why := "its setup failed"
		if st.Err != nil {
			why = "its " + st.Err.Error()
		}
		return strings.ReplaceAll(why, "\n", " ")
	}
	why := "setup " + se.Reason
	if n := len(se.Tail); n > 0 {
		why += "\nlast output: " + se.Tail[n-1]
	}
	return why
}

// prepareActions are the tray's PrepareActions; they run on the Fyne thread
// and show what failed (the setup having been answered meanwhile, e.g. in
// the New workspace window, is no failure).
func (t *Tray) prepareActions() PrepareActions {
	p := t.deps.Prepare
	if p == nil {
		return PrepareActions{}
	}
	act := func(title string, fn func(string) error) func(string) {
		return func(path string) {
			t.background(func(context.Context) {
				if err := fn(path); err != nil && !errors.Is(err, prepare.ErrNotFailed) {
					t.do(func() { t.win.ShowError(title, err) })
				}
			})
		}
	}
	return PrepareActions{
		RetrySetup:  act(LabelRetrySetup, p.Retry),
		StartAnyway: act(LabelStartAnyway, p.StartAnyway),
	}
}
