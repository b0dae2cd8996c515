package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// mainWindow shows the tray menu as a window, for desktops without a tray
// (e.g. MATE or a bare X server), so that the app is never invisible.
type mainWindow struct {
	win fyne.Window
}

func newMainWindow(a fyne.App) *mainWindow {
	w := a.NewWindow("CodeHydra")
	// Closing the only window must end the app, or it would run on unseen.
	w.SetMaster()
	w.Resize(fyne.NewSize(440, 520))
	w.SetContent(widget.NewLabel("Loading…"))
	w.Show()
	return &mainWindow{win: w}
}

// update shows menu.
func (m *mainWindow) update(menu *fyne.Menu) {
	m.win.SetContent(container.NewVScroll(menuContent(m.win.Canvas(), menu)))
}

// menuContent lays a menu out as widgets: a disabled item is a line of
// text, an item with a submenu is its label with a button that pops the
// submenu up, any other item a button.
func menuContent(c fyne.Canvas, menu *fyne.Menu) *fyne.Container {
	box := container.NewVBox()
	for _, it := range menu.Items {
		switch {
		case it.IsSeparator:
			box.Add(widget.NewSeparator())
		case it.ChildMenu != nil:
			child := it.ChildMenu
			var more *widget.Button
			more = widget.NewButton("Actions ▾", func() {
				widget.ShowPopUpMenuAtRelativePosition(child, c, fyne.NewPos(0, more.Size().Height), more)
			})
			if it.Disabled {
				more.Disable()
			}
			box.Add(container.NewBorder(nil, nil, nil, more, widget.NewLabel(it.Label)))
		case it.Action == nil:
			box.Add(widget.NewLabel(it.Label))
		default:
			b := widget.NewButton(it.Label, it.Action)
			if it.Disabled {
				b.Disable()
			}
			box.Add(b)
		}
	}
	return box
}
