package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"codehydra/app/internal/uitest"
	"codehydra/internal/testenv"
	"codehydra/previews"
	"codehydra/workspace"
)

// devServers are dev servers whose start the test carries out: Start
// asks for one on started, and the test runs it (set).
type devServers struct {
	mu      sync.Mutex
	run     *testenv.ServerTree
	started chan string
}

func (d *devServers) Configured(string) bool { return true }

func (d *devServers) Running(string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.run != nil
}

func (d *devServers) Start(_ context.Context, path string) error {
	d.started <- path
	return nil
}

func (d *devServers) Stop(context.Context, string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.run.Stop()
	d.run = nil
	return nil
}

func (d *devServers) set(run testenv.ServerTree) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.run = &run
}

func (d *devServers) roots(string) []previews.Root {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run == nil {
		return nil
	}
	return []previews.Root{{Pid: d.run.Pid, Source: "task:project:run"}}
}

// TestTheSubmenuOpensEachEndpointAndStartsAndStopsTheDevServer: the
// server the agent started gets an Open item (its own server none); Start
// dev server runs the dev server, whose ports then show with Stop dev
// server; Stop takes them away; an Open item opens its URL.
func TestTheSubmenuOpensEachEndpointAndStartsAndStopsTheDevServer(t *testing.T) {
	f, ws, agents := uitest.OneWorkspace(uitest.AgentIdle)
	agent := testenv.StartServerTree(t, t.TempDir())
	dev := &devServers{started: make(chan string, 1)}
	finder := &countedPreviews{Previews: previews.New(previews.Options{Agents: testenv.TreeAgents{ws.Path: agent}, Runs: dev.roots})}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Previews: finder, DevServers: dev})
	h.tray.previewEvery = 20 * time.Millisecond
	var opened [][]string
	var openedMu sync.Mutex
	h.tray.browser.getenv = func(string) string { return "" }
	h.tray.browser.run = func(argv []string) error {
		openedMu.Lock()
		defer openedMu.Unlock()
		opened = append(opened, argv)
		return nil
	}
	h.startTray()

	open := func(port int) string { return fmt.Sprintf("Open http://127.0.0.1:%d", port) }
	sub := func() []string {
		it := find(h.view.menu(), "○ feat (idle)")
		if it == nil {
			return nil
		}
		return labels(it.ChildMenu)
	}
	h.waitFor("the agent's server in the submenu", func() bool {
		return slices.Contains(sub(), open(agent.ChildPort)) && slices.Contains(sub(), LabelStartDevServer)
	})
	if slices.Contains(sub(), open(agent.OwnPort)) {
		t.Fatalf("the agent's own server is offered:\n%s", strings.Join(sub(), "\n"))
	}

	// No change, no new menu: a read after two whole reads that found
	// what the menu shows.
	built := h.menusBuilt()
	finder.waitReads(h, 3)
	if n := h.menusBuilt(); n != built {
		t.Errorf("%d menus built while nothing changed", n-built)
	}

	find(h.view.menu(), "○ feat (idle)", LabelStartDevServer).Action()
	select {
	case path := <-dev.started:
		if path != ws.Path {
			t.Fatalf("started the dev server of %s", path)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start dev server did not start it")
	}
	run := testenv.StartServerTree(t, t.TempDir())
	dev.set(run)
	h.waitFor("the dev server's ports and Stop", func() bool {
		s := sub()
		return slices.Contains(s, open(run.OwnPort)) && slices.Contains(s, open(run.ChildPort)) &&
			slices.Contains(s, LabelStopDevServer) && !slices.Contains(s, LabelStartDevServer)
	})

	find(h.view.menu(), "○ feat (idle)", open(run.ChildPort)).Action()
	h.waitFor("the browser opened", func() bool {
		openedMu.Lock()
		defer openedMu.Unlock()
		return len(opened) == 1
	})
	if argv := opened[0]; argv[len(argv)-1] != fmt.Sprintf("http://127.0.0.1:%d", run.ChildPort) {
		t.Errorf("opened %q", argv)
	}

	find(h.view.menu(), "○ feat (idle)", LabelStopDevServer).Action()
	h.waitFor("the dev server's ports gone, and Start back", func() bool {
		s := sub()
		return !slices.Contains(s, open(run.ChildPort)) && slices.Contains(s, LabelStartDevServer) && slices.Contains(s, open(agent.ChildPort))
	})
}

// countedPreviews counts the tray's reads of its Previews.
type countedPreviews struct {
	Previews
	reads atomic.Int32
}

func (c *countedPreviews) Endpoints(paths ...string) (map[string][]workspace.Endpoint, error) {
	c.reads.Add(1)
	return c.Previews.Endpoints(paths...)
}

// waitReads waits until the tray has begun n more reads than now; reads
// come one after another, so the first n-1 of them are done.
func (c *countedPreviews) waitReads(h *harness, n int32) {
	from := c.reads.Load()
	h.waitFor(fmt.Sprintf("%d more reads of the previews", n), func() bool { return c.reads.Load() >= from+n })
}

// unreadable are previews that cannot be read, as on a system without
// /proc.
type unreadable struct{}

func (unreadable) Endpoints(...string) (map[string][]workspace.Endpoint, error) {
	return nil, errors.New("not supported here")
}

// TestEndpointsThatCannotBeReadLeaveTheDevServerItems: where endpoints
// cannot be read, the submenu has no Open item, and Start dev server still.
func TestEndpointsThatCannotBeReadLeaveTheDevServerItems(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	finder := &countedPreviews{Previews: unreadable{}}
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Previews: finder, DevServers: &devServers{started: make(chan string, 1)}})
	h.tray.previewEvery = 20 * time.Millisecond
	h.startTray()
	h.waitFor("Start dev server", func() bool { return find(h.view.menu(), "○ feat (idle)", LabelStartDevServer) != nil })
	// Failed reads keep the dev server's item.
	finder.waitReads(h, 3)
	h.drain()
	if find(h.view.menu(), "○ feat (idle)", LabelStartDevServer) == nil {
		t.Error("failed reads of the endpoints took Start dev server away")
	}
	if sub := labels(find(h.view.menu(), "○ feat (idle)").ChildMenu); slices.ContainsFunc(sub, func(l string) bool { return strings.HasPrefix(l, "Open http") }) {
		t.Errorf("an Open item without endpoints:\n%s", strings.Join(sub, "\n"))
	}
}
