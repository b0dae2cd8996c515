package window

import (
	"context"
	"errors"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/prepare"
	"codehydra/workspace"
)

// setupProgress is the part of the New workspace window that follows the
// new workspace's copy and setup, and after a failure says why and offers
// to retry the setup or to start the agent anyway.
type setupProgress struct {
	u        *UI
	win      fyne.Window
	progress *widget.Label
	retry    *widget.Button
	anyway   *widget.Button
	box      *fyne.Container
	stop     context.CancelFunc
	path     string
}

func newSetupProgress(u *UI, win fyne.Window) *setupProgress {
	p := &setupProgress{u: u, win: win, progress: statusLabel(), stop: func() {}}
	p.retry = widget.NewButton("Retry setup", func() { p.act(u.deps.Prepare.Retry) })
	p.anyway = widget.NewButton("Start agent anyway", func() { p.act(u.deps.Prepare.StartAnyway) })
	p.box = container.NewVBox(p.progress, container.NewHBox(layout.NewSpacer(), p.anyway, p.retry))
	p.box.Hide()
	return p
}

// follow shows the preparation of the workspace ws just created, and
// returns false when it has none (the window may close at once).
func (p *setupProgress) follow(ws workspace.Workspace) bool {
	if p.u.deps.Prepare == nil {
		return false
	}
	if _, ok := p.u.deps.Settings.Get().SetupFor(ws.ProjectPath); !ok {
		return false
	}
	p.path = ws.Path
	say(p.progress, "Preparing "+ws.Name+"…", false)
	p.retry.Hide()
	p.anyway.Hide()
	p.box.Show()
	ctx, stop := context.WithCancel(p.u.ctx)
	p.stop = stop
	// The preparation may be over before the subscription: load reads it
	// once the events are followed.
	p.u.follow(ctx, func() { p.show() }, func(batch []workspace.Event) {
		for _, e := range batch {
			if e.Kind == workspace.EventAgentChanged && e.Workspace.Path == ws.Path {
				p.u.do(p.show)
				return
			}
		}
	})
	return true
}

// show puts the current state of the preparation on screen.
func (p *setupProgress) show() {
	st, ok := p.u.deps.Prepare.State(p.path)
	if !ok {
		return // not begun yet
	}
	notes := ""
	// "Note:" sets them apart from the setup's output shown above them.
	for _, n := range st.Notes {
		notes += "\nNote: " + n
	}
	failed := st.Phase == prepare.PhaseFailed
	p.retry.Hidden, p.anyway.Hidden = !failed, !failed
	switch st.Phase {
	case prepare.PhaseDone:
		p.stop()
		// The notes of a failed setup were shown with its failure: once
		// the user started the agent anyway, the window has said all.
		if notes == "" || st.Anyway {
			p.win.Close()
			return
		}
		say(p.progress, "Ready; the agent is starting."+notes, false)
	case prepare.PhaseFailed:
		say(p.progress, "The workspace is there, but "+errorText(st.Err)+notes+
			"\nFix the cause and retry the setup, or start the agent without it.", true)
	default:
		say(p.progress, st.Detail()+"\n"+st.Progress+notes, false)
	}
	p.box.Refresh()
}

// act runs Retry or StartAnyway and shows what failed.
func (p *setupProgress) act(fn func(string) error) {
	if err := fn(p.path); err != nil && !errors.Is(err, prepare.ErrNotFailed) {
		say(p.progress, err.Error(), true)
		return
	}
	p.show()
}

// errorText is err's message as a sentence start ("setup failed …").
func errorText(err error) string {
	if err == nil {
		return "its setup failed"
	}
	return "its " + err.Error()
}
