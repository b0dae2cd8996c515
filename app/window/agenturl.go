package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"
)

// The window shown when no browser could be started ("Open agent in
// browser" with neither $BROWSER nor xdg-open working): the address to
// open by hand, and a button that copies it.

// LabelCopyURL is the agent-address window's copy button; tests press it
// by this label.
const LabelCopyURL = "Copy address"

// showAgentURL shows s.Link, the agent's web UI of the workspace at
// s.Path, for the user to open by hand, in a window titled after s.Title
// (the menu item that could not open it). It is on the user's own screen,
// so the whole link, password and all, is shown: it is what a browser
// needs.
func (u *UI) showAgentURL(s Spec) {
	link := s.Link
	u.window(s, func() (fyne.Window, func()) {
		w := u.app.NewWindow("CodeHydra: " + s.Title)
		head := widget.NewLabelWithStyle("No browser could be opened", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		why := widget.NewLabel("Neither $BROWSER nor xdg-open could start a browser. Open this address in your browser; it holds the agent's password, so paste it nowhere else:")
		why.Wrapping = fyne.TextWrapWord
		addr := widget.NewLabel(link)
		addr.Wrapping = fyne.TextWrapBreak
		addr.Selectable = true
		var copyBtn *widget.Button
		copyBtn = widget.NewButton(LabelCopyURL, func() {
			u.CopyText(link)
			copyBtn.SetText("Copied")
		})
		copyBtn.Importance = widget.HighImportance
		w.Canvas().SetOnTypedKey(func(k *fyne.KeyEvent) {
			if k.Name == fyne.KeyEscape {
				w.Close()
			}
		})
		w.SetContent(container.NewVBox(head, why, addr,
			container.NewHBox(layout.NewSpacer(), widget.NewButton("Close", w.Close), copyBtn)))
		w.Resize(fyne.NewSize(480, 0))
		return w, nil
	})
}
