package app

import (
	"runtime"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/systray"
)

// systrayView puts the tray menu and icon on the desktop through the
// systray library itself rather than through Fyne's driver: Fyne opens a
// hidden OpenGL window ("SystrayMonitor", to learn when to quit) as soon
// as a tray menu is set, which loads the GL driver (about 54 MB with
// Mesa) into a process that shows no window. The menu is the same
// *fyne.Menu BuildMenu makes; its actions run on the Fyne thread.
type systrayView struct {
	do func(fn func())

	mu    sync.Mutex
	ready bool       // the item is on the bus: menus can be set
	menu  *fyne.Menu // the latest menu, shown once ready
	icon  []byte
}

// startSystray registers the tray with a and starts it when a's event
// loop starts; it ends when the loop does.
func startSystray(a fyne.App, title string, do func(fn func())) *systrayView {
	v := &systrayView{do: do}
	start, end := systray.RunWithExternalLoop(v.onReady, nil)
	a.Lifecycle().SetOnStarted(start)
	a.Lifecycle().SetOnStopped(end)
	// Some StatusNotifier hosts fail on an item without a title (the
	// reason Fyne's driver sets one too).
	if runtime.GOOS != "windows" && runtime.GOOS != "darwin" {
		systray.SetTitle(title)
	}
	return v
}

func (v *systrayView) onReady() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ready = true
	if v.icon != nil {
		systray.SetIcon(v.icon)
	}
	if v.menu != nil {
		v.show(v.menu)
	}
}

// SetSystemTrayMenu shows m in place of the menu shown.
func (v *systrayView) SetSystemTrayMenu(m *fyne.Menu) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.menu = &fyne.Menu{Label: m.Label, Items: m.Items}
	if v.ready {
		v.show(v.menu)
	}
}

// SetSystemTrayIcon shows icon, a PNG.
func (v *systrayView) SetSystemTrayIcon(icon fyne.Resource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.icon = icon.Content()
	if v.ready {
		systray.SetIcon(v.icon)
	}
}

// show replaces the menu on the bus with m. v.mu is held.
func (v *systrayView) show(m *fyne.Menu) {
	systray.ResetMenu()
	v.add(m.Items, nil, false)
}

// add adds items under parent (nil: the top level), as Fyne's driver
// does: separators, check marks, disabled items and submenus. A
// fyne.MenuItem cannot say that it is a check item that is unchecked, so
// the items of a menu of switches (toggles: a workspace's MCP servers) are
// all check items, and an unchecked one shows an empty box rather than
// looking like an action.
func (v *systrayView) add(items []*fyne.MenuItem, parent *systray.MenuItem, toggles bool) {
	for _, i := range items {
		if i.IsSeparator {
			if parent != nil {
				parent.AddSeparator()
			} else {
				systray.AddSeparator()
			}
			continue
		}
		var item *systray.MenuItem
		switch {
		case parent != nil && (i.Checked || toggles):
			item = parent.AddSubMenuItemCheckbox(i.Label, "", i.Checked)
		case parent != nil:
			item = parent.AddSubMenuItem(i.Label, "")
		case i.Checked:
			item = systray.AddMenuItemCheckbox(i.Label, "", true)
		default:
			item = systray.AddMenuItem(i.Label, "")
		}
		if i.Disabled {
			item.Disable()
		}
		if i.ChildMenu != nil {
			v.add(i.ChildMenu.Items, item, i.ChildMenu.Label == LabelMCPServers)
		}
		fn := i.Action
		go func() {
			for range item.ClickedCh {
				if fn != nil {
					v.do(fn)
				}
			}
		}()
	}
}

// trayTitle is the tray item's title: the app's name, else its ID.
func trayTitle(a fyne.App) string {
	if name := a.Metadata().Name; name != "" {
		return name
	}
	return a.UniqueID()
}
