package app

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

// agentURLTitle is the title of the agent-address window.
const agentURLTitle = "CodeHydra: " + LabelOpenAgent

// showAgentURL shows link, the agent's web UI of the workspace at path,
// for the user to open by hand. It is on the user's own screen, so the
// whole link, password and all, is shown: it is what a browser needs.
func (u *ui) showAgentURL(path, link string) {
	u.window(windowSpec{Kind: windowAgentURL, Path: path, Link: link}, func() (fyne.Window, func()) {
		w := u.app.NewWindow(agentURLTitle)
		head := widget.NewLabelWithStyle("No browser could be opened", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		why := widget.NewLabel("Neither $BROWSER nor xdg-open could start a browser. Open this address in your browser; it holds the agent's password, so paste it nowhere else:")
		why.Wrapping = fyne.TextWrapWord
		addr := widget.NewLabel(link)
		addr.Wrapping = fyne.TextWrapBreak
		addr.Selectable = true
		var copyBtn *widget.Button
		copyBtn = widget.NewButton(LabelCopyURL, func() {
			u.copyText(link)
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
