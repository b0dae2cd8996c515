package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/systray"

	"codehydra/app/window"
	"codehydra/assets"
	"codehydra/internal/paths"
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
// State (BuildMenu) rather than patching items. It opens the windows the
// menu asks for (win), and tells them what it knows (window.Tray).
type Tray struct {
	ctx  context.Context // done when the UI stops
	app  fyne.App
	deps Deps
	log  *slog.Logger
	// do runs fn on the Fyne thread: fyne.Do, or a queue in tests.
	do func(fn func())
	// win opens the windows: in window processes (procs) when there are
	// any, else in this process.
	win   *window.UI
	procs *windowProcs
	// notifier shows a desktop notification (notify.go); asker shows one
	// about an agent's pending request, with its answers as actions where
	// the desktop offers them, and blocks until it is answered, closed,
	// or ctx ends (then it takes the notice back). Nil: notifier shows it
	// without actions.
	notifier func(Notice) error
	asker    func(ctx context.Context, n Notice, invoked func(key string)) error
	// browser opens the agents' web UIs (agenturl.go).
	browser *browser
	// previewEvery is how often the endpoints and dev servers are read
	// (DefaultPreviewEvery); refreshing serializes the reads, so that an
	// older one never lands after a newer one; noPreviews logs once that
	// endpoints cannot be read.
	previewEvery time.Duration
	refreshing   sync.Mutex
	noPreviews   sync.Once
	// view is the system tray, nil when there is none; main is the main
	// window shown instead, nil when there is a tray.
	view trayView
	main *mainWindow
	// setTooltip sets the tray's hover text; Fyne offers no tooltip API, so
	// this goes to the systray library underneath it.
	setTooltip func(string)
	wg         sync.WaitGroup

	mu    sync.Mutex
	state State
	// shown is the state on screen, to skip rebuilds that change nothing.
	shown    State
	hasShown bool
	// built counts the menus built; drawn is the count of the one on
	// screen, touched on the Fyne thread only. Two goroutines may
	// publish at once (an event, an answer coming back), and the newer
	// menu must not be replaced by the older one queued after it.
	built, drawn int
	icons        map[string]fyne.Resource
	// questions counts the MCP servers' questions asked, to tell their
	// windows apart.
	questions int
	// asked takes back the notice of each pending request shown, by
	// request ID, once the request is gone.
	asked map[string]context.CancelFunc
}

// newTray makes the tray of app a until ctx is done; its windows open in
// window processes run as windowCommand, or here when it is empty.
func newTray(ctx context.Context, a fyne.App, deps Deps, do func(fn func()), windowCommand []string) *Tray {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	t := &Tray{
		ctx:          ctx,
		app:          a,
		deps:         deps,
		log:          log,
		do:           do,
		notifier:     fyneNotifier(a),
		browser:      &browser{dir: paths.RuntimeDir(), keep: time.Minute, getenv: getenv, run: startOpener, platform: a.OpenURL},
		setTooltip:   systray.SetTooltip,
		icons:        map[string]fyne.Resource{},
		asked:        map[string]context.CancelFunc{},
		previewEvery: DefaultPreviewEvery,
	}
	t.deps.Settings = settingsStore{deps.Settings, t.refreshMCPServers}
	opts := window.Options{Do: do}
	if len(windowCommand) > 0 {
		t.procs = newWindowProcs(t, windowCommand)
		opts.Elsewhere, opts.CloseElsewhere = t.procs.open, t.procs.close
	}
	t.win = window.New(ctx, a, t.deps.windows(t, log), opts)
	return t
}

// start loads the state, shows it, and follows the manager's events in
// the background until the UI stops. Subscribing first means no change
// falls between what the load reads and the first batch.
func (t *Tray) start() {
	events, unsubscribe := t.deps.Workspaces.Subscribe()
	t.mu.Lock()
	t.reload(t.ctx)
	t.mu.Unlock()
	t.publish()
	t.background(func(ctx context.Context) {
		defer unsubscribe()
		workspace.Follow(ctx, events, t.onEvents)
	})
	t.background(t.refreshAtMidnight)
	if t.deps.Previews != nil || t.deps.DevServers != nil {
		t.background(t.pollPreviews)
	}
	if t.deps.Questions != nil {
		stop := t.deps.Questions.Listen(t.elicit)
		t.background(func(ctx context.Context) {
			<-ctx.Done()
			stop()
		})
	}
}

// background runs fn on its own goroutine; fn gets the UI's context and
// must return soon after it is done.
func (t *Tray) background(fn func(ctx context.Context)) {
	t.wg.Go(func() { fn(t.ctx) })
}

// wait waits for the background work of the tray and its windows.
func (t *Tray) wait() {
	t.wg.Wait()
	t.win.Wait()
}

// onEvents turns a batch of events into one rebuild: D-Bus menus flicker on
// each, and a burst (every agent reporting at startup, a delete's steps)
// would otherwise cost one each.
func (t *Tray) onEvents(batch []workspace.Event) {
	var notes []Notice
	for _, e := range batch {
		notes = append(notes, t.handle(t.ctx, e)...)
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
			t.withdrawGone(w.Agent, next)
			w.Agent = next
			w.SetupFailed = t.setupFailed(w.Workspace.Path)
			w.Prompt = t.promptDelivery(w.Workspace.Path)
		})
		return notes
	case workspace.EventMetadataChanged:
		md := t.metadata(ctx, e.Workspace.Path)
		ahead := t.ahead(ctx, e.Workspace.Path, md)
		t.update(e.Workspace.Path, func(w *WorkspaceState) {
			w.CreatedBy, w.Base, w.Ahead, w.MCPOff = md.createdBy, md.base, ahead, md.mcpOff
		})
	case workspace.EventStatusChanged:
		t.update(e.Workspace.Path, func(w *WorkspaceState) {
			w.Ahead = t.ahead(ctx, w.Workspace.Path, workspaceMetadata{createdBy: w.CreatedBy})
		})
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
// only events tell (delete progress) carries over by path. The notices of
// requests that went with their workspace are taken back. t.mu is held.
func (t *Tray) reload(ctx context.Context) {
	d := t.deps
	prev := map[string]WorkspaceState{}
	for _, p := range t.state.Projects {
		for _, w := range p.Workspaces {
			prev[w.Workspace.Path] = w
		}
	}
	// A project whose list failed keeps its notices: its workspaces are
	// not known to be gone.
	unlisted := map[string]bool{}
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
			t.log.WarnContext(ctx, "list workspaces", slog.String("project", p.Path), slog.Any("err", err))
			ps.Err = window.UserMessage(err)
			unlisted[p.Path] = true
		}
		for _, w := range list {
			md := t.metadata(ctx, w.Path)
			ws := WorkspaceState{Workspace: w, Agent: t.agentStatus(w.Path), CreatedBy: md.createdBy, Base: md.base, Ahead: t.ahead(ctx, w.Path, md)}
			ws.SetupFailed = t.setupFailed(w.Path)
			ws.Prompt = t.promptDelivery(w.Path)
			ws.MCPServers, ws.MCPOff = t.mcpServers(p.Path), md.mcpOff
			ws.Ports, _ = workspace.PortsOf(w.Path)
			if old, ok := prev[w.Path]; ok {
				ws.Deleting, ws.DeleteStep, ws.DeleteErr = old.Deleting, old.DeleteStep, old.DeleteErr
				ws.Updating, ws.CreatingPR = old.Updating, old.CreatingPR
				ws.Answering = old.Answering
				ws.Endpoints, ws.DevServer = old.Endpoints, old.DevServer
				t.withdrawGone(old.Agent, ws.Agent)
				delete(prev, w.Path)
			}
			ps.Workspaces = append(ps.Workspaces, ws)
		}
		next.Projects = append(next.Projects, ps)
	}
	for _, w := range prev {
		if !unlisted[w.Workspace.ProjectPath] {
			t.withdrawGone(w.Agent, workspace.AgentStatus{})
		}
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
	a := t.deps.Agents
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
	if t.deps.Agents == nil {
		return workspace.PromptDelivery{}
	}
	d, _ := t.deps.Agents.PromptDelivery(path)
	return d
}

// State returns the current state.
func (t *Tray) State() State {
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
	t.built++
	n := t.built
	icon := t.icon(Overall(s))
	t.mu.Unlock()

	menu := BuildMenu(s, t.actions())
	summary := Summary(s)
	t.do(func() {
		if n < t.drawn {
			return
		}
		t.drawn = n
		if t.view != nil {
			t.view.SetSystemTrayMenu(menu)
			if icon != nil {
				t.view.SetSystemTrayIcon(icon)
			}
			t.setTooltip(summary)
		}
		if t.main != nil {
			t.main.update(menu)
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
	if len(notes) == 0 || !t.deps.Settings.Get().Notifications {
		return
	}
	var plain []Notice
	for _, n := range notes {
		if n.Asks == nil || t.asker == nil {
			plain = append(plain, n)
			continue
		}
		t.ask(n)
	}
	if len(plain) > 0 {
		t.do(func() { t.sendNotices(plain) })
	}
}

// errAgentGone is what an agent action says when the agent stopped after
// the menu was built.
var errAgentGone = errors.New("the agent is not ready now; wait until it is, or restart it")

// actions are the menu's actions; they run on the Fyne thread.
func (t *Tray) actions() Actions {
	open := func(s window.Spec) func() { return func() { t.win.Open(s) } }
	a := Actions{
		CopyText:        t.copyText,
		Delete:          func(ws workspace.Workspace) { t.win.Open(window.Spec{Kind: window.KindDelete, Workspace: ws}) },
		NewWorkspace:    open(window.Spec{Kind: window.KindCreate}),
		AddProject:      open(window.Spec{Kind: window.KindAddProject}),
		Settings:        open(window.Spec{Kind: window.KindSettings}),
		Quit:            func() { t.win.UnlessBusy(LabelQuit, t.app.Quit) },
		SwitchMCPServer: t.switchMCPServer,
	}
	a.FolderActions = t.folderActions()
	a.PrepareActions = t.prepareActions()
	a.LandActions = t.landActions()
	a.RequestActions = t.requestActions()
	a.PreviewActions = t.previewActions()
	if agents := t.deps.Agents; agents != nil {
		a.OpenAgent = t.openAgent
		a.CopyAttach = func(path string) {
			t.withAgentServer(LabelCopyAttach, path, func(port int, password string) {
				t.copyText(AttachCommand(port, password))
			})
		}
		a.RestartAgent = func(path string) {
			t.background(func(ctx context.Context) {
				if err := agents.Restart(path); err != nil {
					t.do(func() { t.win.ShowError("Restart agent", err) })
				}
			})
		}
	}
	t.hibernateActions(&a)
	t.copyConfigActions(&a)
	return a
}

// copyText puts text on the clipboard.
func (t *Tray) copyText(text string) { t.app.Clipboard().SetContent(text) }

// BusyAgents names the workspaces whose agents are in the middle of a
// turn (working, or waiting for the user's answer), in the menu's order.
func (t *Tray) BusyAgents() []string { return busyAgents(t.State()) }

// busyAgents names the workspaces of s whose agents are in a turn.
func busyAgents(s State) []string {
	var names []string
	for _, p := range s.Projects {
		for _, w := range p.Workspaces {
			switch w.Phase() {
			case PhaseBusy, PhaseNeedsInput:
				names = append(names, w.Workspace.Name)
			}
		}
	}
	return names
}

// DeleteProgress is how the delete of the workspace at path goes, as its
// events told.
func (t *Tray) DeleteProgress(path string) window.DeleteProgress {
	for _, p := range t.State().Projects {
		for _, w := range p.Workspaces {
			if w.Workspace.Path == path {
				return window.DeleteProgress{Running: w.Deleting, Step: w.DeleteStep, Err: w.DeleteErr}
			}
		}
	}
	return window.DeleteProgress{}
}
