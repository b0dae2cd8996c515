package app

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"fyne.io/fyne/v2"

	"codehydra/workspace"
)

// The tray's preview items: the workspace's endpoints to open in the
// browser, and its project's dev server to start and stop. They are
// stable: tests drive the tray over D-Bus by these strings.
const (
	LabelStartDevServer = "Start dev server"
	LabelStopDevServer  = "Stop dev server"
)

// LabelOpenEndpoint is the item that opens an endpoint, e.g.
// "Open http://127.0.0.1:8000".
func LabelOpenEndpoint(e workspace.Endpoint) string { return "Open " + e.URL }

// Previews finds what the workspaces' processes listen on; package
// previews implements it.
type Previews interface {
	// Endpoints are the endpoints of the workspaces at paths, by path.
	Endpoints(paths ...string) (map[string][]workspace.Endpoint, error)
}

// DevServers starts and stops the projects' dev servers: the command
// `run` of a project's settings, run as the workspace's background task
// project:run.
type DevServers interface {
	// Configured reports whether the project of the workspace at path has
	// a run command.
	Configured(path string) bool
	// Running reports whether the workspace's dev server runs.
	Running(path string) bool
	Start(ctx context.Context, path string) error
	Stop(ctx context.Context, path string) error
}

// DevServerState is a workspace's dev server as the tray shows it.
type DevServerState struct {
	// Configured: the project has a run command; Running: it runs.
	Configured, Running bool
}

// PreviewActions open endpoints and start and stop dev servers; nil ones
// leave their items out.
type PreviewActions struct {
	OpenEndpoint                  func(url string)
	StartDevServer, StopDevServer func(path string)
}

// previewItems are an item per endpoint and the dev server's start or
// stop, with a separator after them; none for a workspace being deleted.
func previewItems(w WorkspaceState, a PreviewActions) []*fyne.MenuItem {
	if w.Deleting {
		return nil
	}
	var items []*fyne.MenuItem
	for _, e := range w.Endpoints {
		if a.OpenEndpoint != nil {
			url := e.URL
			items = append(items, fyne.NewMenuItem(LabelOpenEndpoint(e), func() { a.OpenEndpoint(url) }))
		}
	}
	path := w.Workspace.Path
	switch {
	case !w.DevServer.Configured:
	case w.DevServer.Running && a.StopDevServer != nil:
		items = append(items, fyne.NewMenuItem(LabelStopDevServer, func() { a.StopDevServer(path) }))
	case !w.DevServer.Running && a.StartDevServer != nil:
		items = append(items, fyne.NewMenuItem(LabelStartDevServer, func() { a.StartDevServer(path) }))
	}
	if len(items) == 0 {
		return nil
	}
	return append(items, fyne.NewMenuItemSeparator())
}

// DefaultPreviewEvery is how often the tray looks for endpoints: a look
// costs a few milliseconds of /proc reading for all workspaces together.
const DefaultPreviewEvery = 3 * time.Second

// devServerTimeout bounds a start or stop of a dev server from the tray.
const devServerTimeout = time.Minute

// previewActions open endpoints in the browser and start and stop dev
// servers, each in the background, showing what failed.
func (t *Tray) previewActions() PreviewActions {
	a := PreviewActions{OpenEndpoint: t.openEndpoint}
	d := t.deps.DevServers
	if d == nil {
		return a
	}
	// The menu shows the change at once, not at the next look.
	refreshed := func(fn func(ctx context.Context, path string) error) func(ctx context.Context, path string) error {
		return func(ctx context.Context, path string) error {
			defer t.refreshPreviews()
			return fn(ctx, path)
		}
	}
	a.StartDevServer = t.backgroundAction(LabelStartDevServer, devServerTimeout, refreshed(d.Start))
	a.StopDevServer = t.backgroundAction(LabelStopDevServer, devServerTimeout, refreshed(d.Stop))
	return a
}

// openEndpoint opens url in the browser, in the background.
func (t *Tray) openEndpoint(url string) {
	b := t.browser
	t.background(func(context.Context) {
		if err := b.openLink(url); err != nil {
			t.log.Warn("no browser could be opened", slog.Any("err", err))
			t.do(func() { t.win.ShowError("Open "+url, err) })
		}
	})
}

// pollPreviews refreshes the endpoints and dev servers every
// t.previewEvery until ctx is done.
func (t *Tray) pollPreviews(ctx context.Context) {
	tick := time.NewTicker(t.previewEvery)
	defer tick.Stop()
	for {
		t.refreshPreviews()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// refreshPreviews reads every workspace's endpoints and dev server, and
// publishes only when they changed. Endpoints that cannot be read (a
// system where they are not supported) are left empty.
func (t *Tray) refreshPreviews() {
	t.refreshing.Lock()
	defer t.refreshing.Unlock()
	t.mu.Lock()
	var paths []string
	for _, p := range t.state.Projects {
		for _, w := range p.Workspaces {
			paths = append(paths, w.Workspace.Path)
		}
	}
	t.mu.Unlock()

	var endpoints map[string][]workspace.Endpoint
	if t.deps.Previews != nil && len(paths) > 0 {
		var err error
		if endpoints, err = t.deps.Previews.Endpoints(paths...); err != nil {
			t.noPreviews.Do(func() { t.log.Info("the workspaces' endpoints cannot be read", slog.Any("err", err)) })
		}
	}
	servers := map[string]DevServerState{}
	if d := t.deps.DevServers; d != nil {
		for _, p := range paths {
			servers[p] = DevServerState{Configured: d.Configured(p), Running: d.Running(p)}
		}
	}

	t.mu.Lock()
	var changed []string
	for _, p := range t.state.Projects {
		for _, w := range p.Workspaces {
			path := w.Workspace.Path
			if !slices.Equal(w.Endpoints, endpoints[path]) || w.DevServer != servers[path] {
				changed = append(changed, path)
			}
		}
	}
	for _, path := range changed {
		t.update(path, func(w *WorkspaceState) { w.Endpoints, w.DevServer = endpoints[path], servers[path] })
	}
	t.mu.Unlock()
	if len(changed) > 0 {
		t.publish()
	}
}
