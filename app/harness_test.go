package app

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
)

func TestMain(m *testing.M) { uitest.Main(m, "app-test-home-") }

// harness runs a tray on a test Fyne app. The test goroutine plays the
// Fyne thread: what the tray and its windows hand to do waits in a queue
// until the test drains it (in waitFor), so widgets are only touched by
// one goroutine. Its windows open in this process, unless windowCommand
// names a window process.
type harness struct {
	t      *testing.T
	app    *uitest.App
	tray   *Tray
	view   *recView
	thread uitest.Thread
}

func newHarness(t *testing.T, deps Deps, windowCommand ...string) *harness {
	t.Helper()
	h := &harness{t: t, app: uitest.NewApp(t), view: &recView{}}
	if deps.Settings == nil {
		deps.Settings = settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.tray = newTray(ctx, h.app, deps, h.thread.Do, windowCommand)
	h.tray.setTooltip = h.view.setTooltip
	t.Cleanup(func() {
		h.app.CloseAll()
		cancel()
		done := make(chan struct{})
		go func() { h.tray.wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("background work did not stop")
		}
	})
	return h
}

// startTray starts the tray on the recording view.
func (h *harness) startTray() {
	h.tray.view = h.view
	h.tray.start()
	h.drain()
}

// drain runs what the UI queued for the Fyne thread.
func (h *harness) drain() { h.thread.Drain() }

// menusBuilt drains the queue and counts the menus the tray was given.
func (h *harness) menusBuilt() int {
	h.drain()
	h.view.mu.Lock()
	defer h.view.mu.Unlock()
	return len(h.view.menus)
}

// waitFor drains the queue until cond holds, failing after a deadline.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	h.thread.WaitFor(h.t, what, cond)
}

// windowOpen reports whether a window titled title is open.
func (h *harness) windowOpen(title string) bool { return h.app.WindowOpen(title) }

// recView records what the tray shows.
type recView struct {
	mu       sync.Mutex
	menus    []*fyne.Menu
	icons    []fyne.Resource
	tooltips []string
}

func (v *recView) SetSystemTrayMenu(m *fyne.Menu) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.menus = append(v.menus, m)
}

func (v *recView) SetSystemTrayIcon(r fyne.Resource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.icons = append(v.icons, r)
}

func (v *recView) setTooltip(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tooltips = append(v.tooltips, s)
}

func (v *recView) menu() *fyne.Menu {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.menus) == 0 {
		return nil
	}
	return v.menus[len(v.menus)-1]
}

// labels flattens a menu to its labels, submenus indented by "  ", with
// "(off)" after disabled items and "---" for separators.
func labels(m *fyne.Menu) []string {
	var out []string
	var walk func(m *fyne.Menu, indent string)
	walk = func(m *fyne.Menu, indent string) {
		for _, it := range m.Items {
			switch {
			case it.IsSeparator:
				out = append(out, indent+"---")
				continue
			case it.Disabled:
				out = append(out, indent+it.Label+" (off)")
			default:
				out = append(out, indent+it.Label)
			}
			if it.ChildMenu != nil {
				walk(it.ChildMenu, indent+"  ")
			}
		}
	}
	if m != nil {
		walk(m, "")
	}
	return out
}

// find returns the item at a path of labels.
func find(m *fyne.Menu, path ...string) *fyne.MenuItem {
	for i, label := range path {
		var found *fyne.MenuItem
		for _, it := range m.Items {
			if it.Label == label {
				found = it
			}
		}
		if found == nil || i == len(path)-1 {
			return found
		}
		if found.ChildMenu == nil {
			return nil
		}
		m = found.ChildMenu
	}
	return nil
}
