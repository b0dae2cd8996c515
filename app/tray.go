package app

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/systray"

	"codehydra/assets"
	"codehydra/workspace"
)

// trayView is where the tray menu and icon go: a systrayView in the app,
// a recorder in tests.
type trayView interface {
	SetSystemTrayMenu(menu *fyne.Menu)
	SetSystemTrayIcon(icon fyne.Resource)
}

// Tray owns what the tray shows. Its event loop turns the manager's events
// into a new State, and every change rebuilds the whole menu from that
// State (BuildMenu) rather than patching items.
type Tray struct {
	u *ui
	// view is the system tray, nil when there is none; window is the main
	// window shown instead, nil when there is a tray.
	view   trayView
	window *mainWindow
	// setTooltip sets the tray's hover text; Fyne offers no tooltip API, so
	// this goes to the systray library underneath it.
	setTooltip func(string)
	// remote, when set, is where State comes from: a window process asks
	// the app's tray, which follows every event, rather than following
	// them itself.
	remote func() State

	mu    sync.Mutex
	state State
	// shown is the state on screen, to skip rebuilds that change nothing.
	shown    State
	hasShown bool
	icons    map[string]fyne.Resource
}

func newTray(u *ui) *Tray {
	return &Tray{u: u, setTooltip: systray.SetTooltip, icons: map[string]fyne.Resource{}}
}

// start loads the state, shows it, and follows the manager's events in
// the background until the UI stops.
func (t *Tray) start() {
	t.u.follow(t.u.ctx, func() {
		t.mu.Lock()
		t.reload(t.u.ctx)
		t.mu.Unlock()
		t.publish()
	}, t.onEvents)
}

// onEvents turns a batch of events into one rebuild: D-Bus menus flicker on
// each, and a burst (every agent reporting at startup, a delete's steps)
// would otherwise cost one each.
func (t *Tray) onEvents(batch []workspace.Event) {
	var notes []Notice
	for _, e := range batch {
		notes = append(notes, t.handle(t.u.ctx, e)...)
	}
	t.publish()
	t.notify(notes)
}

// handle applies one event to the state and returns the notifications it
// calls for.
func (t *Tray) handle(ctx context.Context, e workspace.Event) []Notice {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Kind {
	case workspace.EventProjectAdded, workspace.EventProjectRemoved,
		workspace.EventWorkspaceAdded, workspace.EventWorkspaceRemoved:
		t.reload(ctx)
	case workspace.EventAgentChanged:
		var notes []Notice
		t.update(e.Workspace.Path, func(w *WorkspaceState) {
			next := t.agentStatus(w.Workspace.Path)
			notes = AgentNotices(w.Workspace, w.Agent, next)
			w.Agent = next
			w.SetupFailed = t.u.setupFailed(w.Workspace.Path)
			w.Prompt = t.promptDelivery(w.Workspace.Path)
		})
		return notes
	case workspace.EventMetadataChanged:
		by := t.createdBy(ctx, e.Workspace.Path)
		t.update(e.Workspace.Path, func(w *WorkspaceState) { w.CreatedBy = by })
	case workspace.EventDeleteProgress:
		t.update(e.Workspace.Path, func(w *WorkspaceState) {
			w.Deleting, w.DeleteStep, w.DeleteErr = true, e.Step, ""
		})
	case workspace.EventDeleteFailed:
		t.update(e.Workspace.Path, func(w *WorkspaceState) {
			w.Deleting, w.DeleteStep, w.DeleteErr = false, e.Step, e.Err
			if w.DeleteErr == "" {
				w.DeleteErr = "delete failed"
			}
		})
	}
	return nil
}

// reload re-reads projects and workspaces, in the manager's order; what
// only events tell (delete progress) carries over by path. t.mu is held.
func (t *Tray) reload(ctx context.Context) {
	d := t.u.deps
	prev := map[string]WorkspaceState{}
	for _, p := range t.state.Projects {
		for _, w := range p.Workspaces {
			prev[w.Workspace.Path] = w
		}
	}
	next := State{
		CanCopyMCPConfig: d.MCPConfig != nil,
		CanRestartAgents: d.Agents != nil,
	}
	if d.MCP != nil {
		next.Notice = d.MCP.PortNotice()
	}
	for _, p := range d.Workspaces.Projects() {
		ps := ProjectState{Project: p}
		list, err := d.Workspaces.Workspaces(p.Path)
		if err != nil {
			t.u.log.WarnContext(ctx, "list workspaces", slog.String("project", p.Path), slog.Any("err", err))
			ps.Err = userMessage(err)
		}
		for _, w := range list {
			ws := WorkspaceState{Workspace: w, Agent: t.agentStatus(w.Path), CreatedBy: t.createdBy(ctx, w.Path)}
			ws.SetupFailed = t.u.setupFailed(w.Path)
			ws.Prompt = t.promptDelivery(w.Path)
			if old, ok := prev[w.Path]; ok {
				ws.Deleting, ws.DeleteStep, ws.DeleteErr = old.Deleting, old.DeleteStep, old.DeleteErr
			}
			ps.Workspaces = append(ps.Workspaces, ws)
		}
		next.Projects = append(next.Projects, ps)
	}
	t.state = next
}

// update applies fn to the workspace at path, copying what it changes so
// that the shown state stays untouched. t.mu is held.
func (t *Tray) update(path string, fn func(*WorkspaceState)) {
	for i, p := range t.state.Projects {
		for j, w := range p.Workspaces {
			if w.Workspace.Path != path {
				continue
			}
			projects := slices.Clone(t.state.Projects)
			list := slices.Clone(p.Workspaces)
			fn(&list[j])
			projects[i].Workspaces = list
			t.state.Projects = projects
			return
		}
	}
}

// agentStatus asks the supervisor about a workspace's agent.
func (t *Tray) agentStatus(path string) workspace.AgentStatus {
	a := t.u.deps.Agents
	if a == nil {
		return workspace.NoAgent
	}
	st := a.AgentStatus(path)
	if st.Port == 0 && st.State != workspace.AgentStateStarting {
		if port, _, ok := a.OpencodeServer(path); ok {
			st.Port = port
		}
	}
	return st
}

// promptDelivery asks the supervisor what became of a workspace's first
// prompt; the supervisor reports each change of it as an agent change.
func (t *Tray) promptDelivery(path string) workspace.PromptDelivery {
	if t.u.deps.Agents == nil {
		return workspace.PromptDelivery{}
	}
	d, _ := t.u.deps.Agents.PromptDelivery(path)
	return d
}

// State returns the current state.
func (t *Tray) State() State {
	if t.remote != nil {
		return t.remote()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// publish rebuilds the menu and icon when the state changed.
func (t *Tray) publish() {
	t.mu.Lock()
	s := t.state
	if t.hasShown && reflect.DeepEqual(s, t.shown) {
		t.mu.Unlock()
		return
	}
	t.shown, t.hasShown = s, true
	icon := t.icon(Overall(s))
	t.mu.Unlock()

	menu := BuildMenu(s, t.actions())
	summary := Summary(s)
	t.u.do(func() {
		if t.view != nil {
			t.view.SetSystemTrayMenu(menu)
			if icon != nil {
				t.view.SetSystemTrayIcon(icon)
			}
			t.setTooltip(summary)
		}
		if t.window != nil {
			t.window.update(menu)
		}
	})
}

// icon is the tray icon of an overall state, nil when assets has none.
// t.mu is held.
func (t *Tray) icon(state string) fyne.Resource {
	if r, ok := t.icons[state]; ok {
		return r
	}
	data := assets.TrayIcon(state)
	if len(data) == 0 {
		return nil
	}
	r := fyne.NewStaticResource("codehydra-"+state+".png", data)
	t.icons[state] = r
	return r
}

// notify shows notices, unless the user turned notifications off.
func (t *Tray) notify(notes []Notice) {
	if len(notes) == 0 || !t.u.deps.Settings.Get().Notifications {
		return
	}
	t.u.do(func() { t.u.sendNotices(notes) })
}

// errAgentGone is what an agent action says when the agent stopped after
// the menu was built.
var errAgentGone = errors.New("the agent is not ready now; wait until it is, or restart it")

// actions are the menu's actions; they run on the Fyne thread.
func (t *Tray) actions() Actions {
	u := t.u
	a := Actions{
		CopyText:     u.copyText,
		Delete:       func(ws workspace.Workspace) { u.openDelete(ws) },
		NewWorkspace: func() { u.openCreate("") },
		AddProject:   func() { u.openAddProject() },
		Settings:     func() { u.openSettings() },
		Quit:         func() { u.unlessBusy(LabelQuit, u.app.Quit) },
	}
	a.FolderActions = u.folderActions()
	a.PrepareActions = u.prepareActions()
	if agents := u.deps.Agents; agents != nil {
		a.OpenAgent = u.openAgent
		a.CopyAttach = func(path string) {
			port, password, ok := agents.OpencodeServer(path)
			if !ok {
				u.showError("Copy attach command", errAgentGone)
				return
			}
			u.copyText(AttachCommand(port, password))
		}
		a.RestartAgent = func(path string) {
			u.background(func(ctx context.Context) {
				if err := agents.Restart(path); err != nil {
					u.do(func() { u.showError("Restart agent", err) })
				}
			})
		}
	}
	u.copyConfigActions(&a)
	return a
}
