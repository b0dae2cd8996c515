package window

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"codehydra/app/internal/uitest"
	"codehydra/internal/settings"
)

func TestMain(m *testing.M) { uitest.Main(m, "window-test-home-") }

// harness runs the windows on a test Fyne app, with the test goroutine
// as the Fyne thread (waitFor drains what the UI queued for it) and a
// tray that says what the test sets.
type harness struct {
	t      *testing.T
	app    *uitest.App
	u      *UI
	tray   *fakeTray
	thread uitest.Thread
}

func newHarness(t *testing.T, deps Deps) *harness {
	t.Helper()
	h := &harness{t: t, app: uitest.NewApp(t), tray: &fakeTray{deletes: map[string]DeleteProgress{}}}
	if deps.Settings == nil {
		deps.Settings = settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	}
	if deps.Tray == nil {
		deps.Tray = h.tray
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.u = New(ctx, h.app, deps, Options{Do: h.thread.Do})
	t.Cleanup(func() {
		h.app.CloseAll()
		cancel()
		done := make(chan struct{})
		go func() { h.u.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("background work did not stop")
		}
	})
	return h
}

// drain runs what the UI queued for the Fyne thread.
func (h *harness) drain() { h.thread.Drain() }

// waitFor drains the queue until cond holds, failing after a deadline.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	h.thread.WaitFor(h.t, what, cond)
}

// windowOpen reports whether a window titled title is open.
func (h *harness) windowOpen(title string) bool { return h.app.WindowOpen(title) }

// fakeTray is a Tray that says what the test sets.
type fakeTray struct {
	mu      sync.Mutex
	busy    []string
	deletes map[string]DeleteProgress
}

// setBusy makes names the busy agents.
func (f *fakeTray) setBusy(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy = names
}

// setDelete makes p the progress of the delete of the workspace at path.
func (f *fakeTray) setDelete(path string, p DeleteProgress) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes[path] = p
}

func (f *fakeTray) BusyAgents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy
}

func (f *fakeTray) DeleteProgress(path string) DeleteProgress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deletes[path]
}

// fakeGateway answers Statuses with what the test sets.
type fakeGateway struct {
	mu sync.Mutex
	st []MCPServerStatus
	// changes are each server's withheld tools; accepted records each
	// AcceptToolChange as "server/tool@hash".
	changes  map[string][]MCPToolChange
	accepted []string
}

func (g *fakeGateway) set(st ...MCPServerStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st = st
}

func (g *fakeGateway) Statuses() []MCPServerStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]MCPServerStatus(nil), g.st...)
}

func (g *fakeGateway) ToolChanges(server string) []MCPToolChange {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]MCPToolChange(nil), g.changes[server]...)
}

// AcceptToolChange takes the change of tool shown with hash, as the
// gateway does: it leaves ToolChanges and the server's count.
func (g *fakeGateway) AcceptToolChange(server, tool, hash string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.accepted = append(g.accepted, server+"/"+tool+"@"+hash)
	i := slices.IndexFunc(g.changes[server], func(c MCPToolChange) bool { return c.Tool == tool })
	if i < 0 || g.changes[server][i].Hash != hash {
		return errors.New("it changed again since it was shown; review it anew")
	}
	g.changes[server] = slices.Delete(g.changes[server], i, i+1)
	for k := range g.st {
		if g.st[k].Name == server {
			g.st[k].ChangedTools--
		}
	}
	return nil
}
