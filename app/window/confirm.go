package window

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// confirmWindow is a question in a small window of its own: in tray mode
// there is no window to hang a dialog on, and Fyne's dialogs do not answer
// Escape.
type confirmWindow struct {
	win     fyne.Window
	message *widget.Label
	ok      *widget.Button
	cancel  *widget.Button
}

// confirm asks title and message with Cancel and a button labelled action
// (which runs act); Escape and closing the window cancel. An open question
// of the same title is brought forward instead (and nil returned).
func (u *UI) confirm(title, message, action string, act func()) *confirmWindow {
	var c *confirmWindow
	u.window(Spec{Kind: KindConfirm, Title: title, Message: message, Action: action, Answered: act}, func() (fyne.Window, func()) {
		c = &confirmWindow{win: u.app.NewWindow("CodeHydra: " + title)}
		head := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		c.message = widget.NewLabel(message)
		c.message.Wrapping = fyne.TextWrapWord
		c.cancel = widget.NewButton("Cancel", c.win.Close)
		c.ok = widget.NewButton(action, func() {
			c.win.Close()
			act()
		})
		c.ok.Importance = widget.DangerImportance
		c.win.SetContent(container.NewVBox(head, c.message,
			container.NewHBox(layout.NewSpacer(), c.cancel, c.ok)))
		c.win.Resize(fyne.NewSize(440, 0))
		answerEscape(c.win, c.win.Close)
		return c.win, nil
	})
	return c
}

// BusyWarning is the sentence that names the busy agents ("featA and
// featB are working."), "" when none is.
func BusyWarning(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0] + " is working."
	}
	const shown = 5
	if len(names) > shown {
		head := names[:shown-1]
		return fmt.Sprintf("%s and %s are working.", strings.Join(head, ", "), plural(len(names)-len(head), "other"))
	}
	head, last := names[:len(names)-1], names[len(names)-1]
	return fmt.Sprintf("%s and %s are working.", strings.Join(head, ", "), last)
}

// UnlessBusy runs act at once when no agent is in a turn; otherwise it
// first asks, naming the agents, whether to do what (e.g. "Quit") anyway.
func (u *UI) UnlessBusy(what string, act func()) {
	names := u.deps.Tray.BusyAgents()
	if len(names) == 0 {
		act()
		return
	}
	u.confirm(what+"?", BusyWarning(names)+" "+what+" anyway? Their work in progress stops.", what+" anyway", act)
}
