// Package app is CodeHydra's desktop UI, built with Fyne: the tray icon and
// menu, the dialogs that create and delete workspaces and add projects, the
// settings window with its metadata editor, and desktop notifications. Where
// the desktop has no tray (no StatusNotifier host), a small main window shows
// the same content so the app is never invisible.
//
// The package reaches the domain only through the small interfaces below;
// main wires them to workspace.Manager, the opencode supervisor, the settings
// store and the MCP server.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/widget"

	"codehydra/assets"
	"codehydra/internal/paths"
	"codehydra/internal/settings"
	"codehydra/workspace"
)

// ErrNoDisplay is returned by Run when there is no display to show a UI on
// (on Linux and the BSDs: neither DISPLAY nor WAYLAND_DISPLAY is set). The
// caller should say so and run headless.
var ErrNoDisplay = errors.New("no display: neither DISPLAY nor WAYLAND_DISPLAY is set, or DISPLAY names an X server that is not running")

// DefaultAppID is the Fyne application ID used when Deps.AppID is empty.
const DefaultAppID = "io.github.codehydra"

// Workspaces is the part of *workspace.Manager that the UI uses.
type Workspaces interface {
	Projects() []workspace.Project
	Workspaces(projectPath string) ([]workspace.Workspace, error)
	Subscribe() (events <-chan workspace.Event, cancel func())
	AddProject(ctx context.Context, path string) (workspace.Project, error)
	RemoveProject(ctx context.Context, path string) error
	Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error)
	Delete(ctx context.Context, wsPath string, o workspace.DeleteOptions) error
	Status(ctx context.Context, wsPath string) (workspace.Status, error)
	Changes(ctx context.Context, wsPath string) (workspace.Changes, error)
	BranchCreated(ctx context.Context, wsPath string) (bool, error)
	Metadata(ctx context.Context, wsPath string) (map[string]string, error)
	SetMetadata(ctx context.Context, wsPath, key string, value *string) error
	Branches(ctx context.Context, projectPath string) ([]string, error)
	ReusableBranches(ctx context.Context, projectPath string) ([]string, error)
	DefaultBase(ctx context.Context, projectPath string) (string, error)
}

// Agents is the part of the opencode supervisor that the UI uses.
type Agents interface {
	// AgentStatus reports what the workspace's agent is doing; it must be
	// cheap (no I/O), as the tray asks on every agent-changed event.
	AgentStatus(path string) workspace.AgentStatus
	// OpencodeServer is the port of the workspace's `opencode serve` and
	// the password it demands (HTTP basic auth as "opencode"); ok=false
	// while none is ready. The password is a secret: it goes only into
	// what the user asked for (the browser, the clipboard), never into a
	// log or a notification.
	OpencodeServer(path string) (port int, password string, ok bool)
	// Restart stops the workspace's agent and starts it again (it also
	// revives a failed one).
	Restart(path string) error
	// RestartAll restarts every agent, e.g. so that each gets a new token.
	RestartAll()
	// FindBinary looks for the opencode executable again and returns it,
	// ok=false when none was found.
	FindBinary() (path string, ok bool)
	// QueuePrompt keeps p, checked with workspace.CheckFirstPrompt, until
	// the agent of the new workspace at path is ready, then gives it to
	// that agent once: what workspace_create's initialPrompt does.
	QueuePrompt(path string, p workspace.FirstPrompt) (workspace.PromptDelivery, error)
	// PromptDelivery is what became of the workspace's first prompt;
	// ok=false when it has none.
	PromptDelivery(path string) (d workspace.PromptDelivery, ok bool)
}

// SettingsStore holds the settings; *settings.Store implements it.
type SettingsStore interface {
	Get() settings.Settings
	Update(fn func(*settings.Settings)) error
}

// MCPServer is the running MCP server; *mcp.Server implements it.
type MCPServer interface {
	Port() int
	URL() string
	// PortNotice says what it means for clients when the fixed port was
	// taken and another one is in use; "" otherwise.
	PortNotice() string
}

// MCPGateway is the user's own MCP servers as CodeHydra runs them (main
// adapts the gateway to it).
type MCPGateway interface {
	// Statuses says how each configured server is doing, by name; it must
	// be cheap, as the Settings window asks every few seconds.
	Statuses() []MCPServerStatus
}

// MCPServerStatus is how one of the user's MCP servers is doing.
type MCPServerStatus struct {
	Name string
	// State is "running", "starting", "stopped" or "failed".
	State string
	// LastError is why the last start failed or the last instance ended;
	// it never holds an env or header value.
	LastError string
	Tools     int
	Calls     int64
	Restarts  int
	// Instances is how many of its instances run (one per workspace for a
	// workspace-scoped server).
	Instances int
}

// Deps is what the UI needs from the rest of the app.
type Deps struct {
	// Workspaces and Settings are required.
	Workspaces Workspaces
	Settings   SettingsStore
	// Agents may be nil (no opencode): agents then show as "no agent" and
	// cannot be restarted.
	Agents Agents
	// MCP may be nil while no server runs.
	MCP MCPServer
	// Gateway may be nil: the MCP servers tab then shows the configured
	// servers without their state.
	Gateway MCPGateway
	// Prepare may be nil: created workspaces then show no setup progress.
	Prepare Preparation
	// RotateToken replaces the MCP access token, and only that: the UI then
	// calls Agents.RestartAll itself. Nil disables "Rotate token".
	RotateToken func() error
	// MCPConfig returns a ready MCP client config for a client of
	// mcp.Clients, acting on the workspace at workspacePath, or as the
	// user when it is "". Nil disables "Copy MCP config".
	MCPConfig func(client, workspacePath string) (string, error)
	// Restart asks for the app to start again once it has shut down
	// (settings such as the MCP port only take effect then). The settings
	// window's "Restart now" calls it on the Fyne thread and then quits the
	// UI, so Run returns; main should then shut down as usual and start the
	// app again. Nil: the window asks the user to quit and start it again.
	Restart func()

	// Logger defaults to discarding.
	Logger *slog.Logger
	// App is the Fyne app; nil makes one with AppID.
	App fyne.App
	// AppID defaults to DefaultAppID.
	AppID string
	// Getenv defaults to os.Getenv.
	Getenv func(string) string
	// TrayHost reports whether the desktop shows tray icons; nil asks the
	// platform (on Linux: the StatusNotifier watcher on the session bus).
	TrayHost func(ctx context.Context) bool
	// DefaultWorktreeRoot is shown in the settings window as what an empty
	// worktree root means (paths.ProjectsDir()).
	DefaultWorktreeRoot string
	// WindowCommand runs a window process (RunWindow): with a tray, each
	// window opens in one, so that the tray process never loads the GL
	// driver. Nil opens the windows in this process.
	WindowCommand []string
}

// Run shows the UI and blocks until the user quits or ctx is done. It must
// be called on the main goroutine (Fyne's event loop needs the main OS
// thread). It returns ErrNoDisplay, without touching Fyne, when there is no
// display.
func Run(ctx context.Context, deps Deps) error {
	if deps.Workspaces == nil || deps.Settings == nil {
		return errors.New("app: Deps.Workspaces and Deps.Settings are required")
	}
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if !hasDisplay(getenv, xSocketDir) {
		return ErrNoDisplay
	}
	a := deps.App
	if a == nil {
		id := deps.AppID
		if id == "" {
			id = DefaultAppID
		}
		a = fyneapp.NewWithID(id)
	}
	if icon := assets.Icon(256); len(icon) > 0 {
		a.SetIcon(fyne.NewStaticResource("codehydra.png", icon))
	}

	uiCtx, cancel := context.WithCancel(ctx)
	u := newUI(uiCtx, a, deps)
	u.notify = desktopNotifier(a, getenv)

	hostCtx, hostCancel := context.WithTimeout(ctx, 2*time.Second)
	trayHost := deps.TrayHost
	if trayHost == nil {
		trayHost = func(ctx context.Context) bool { return hasTrayHost(ctx, getenv) }
	}
	withTray := trayHost(hostCtx)
	hostCancel()
	_, isDesktop := a.(desktop.App)
	if withTray && isDesktop {
		u.tray.view = startSystray(a, trayTitle(a), u.do)
		// Fyne quits when its last window closes; this one, never shown,
		// keeps a window that opens here (no window process could start)
		// from quitting the app as it closes. Unshown, it creates no GL
		// context.
		a.NewWindow("CodeHydra")
		if len(deps.WindowCommand) > 0 {
			u.procs = newWindowProcs(u, deps.WindowCommand)
		}
	} else {
		u.log.Info("no system tray; showing the main window",
			slog.Bool("trayHost", withTray), slog.Bool("desktop", isDesktop))
		u.tray.window = u.newMainWindow()
	}
	u.tray.start()

	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			fyne.Do(a.Quit)
		case <-stopped:
		}
	}()
	a.Run()
	close(stopped)
	cancel()
	u.wait()
	return nil
}

// ui is the running UI: the tray, the open windows, and the background work
// they started.
type ui struct {
	ctx  context.Context // done when the UI stops
	app  fyne.App
	deps Deps
	log  *slog.Logger
	// do runs fn on the Fyne thread: fyne.Do, or a queue in tests.
	do func(fn func())
	// now is the clock.
	now func() time.Time
	// openFolder shows a folder in the file manager (open); failed gets a
	// failure that comes after it returned.
	openFolder func(path string, failed func(error)) error
	// notify shows a desktop notification (notify.go).
	notify func(Notice) error
	// browser opens the agents' web UIs (agenturl.go).
	browser *browser

	// procs, when set, opens the windows in window processes
	// (windowproc.go); nil opens them in this process.
	procs *windowProcs
	// clipboard, when set, is where copied text goes instead of this
	// process's clipboard (a window process's copies go to the app, which
	// outlives the window).
	clipboard func(text string)
	// errors counts the error windows shown, to tell them apart.
	errors int
	// closed, when set, is told the key of each window that closes.
	closed func(key string)

	wg sync.WaitGroup
	// windows are the open single-instance windows by key (windowSpec.key:
	// "create", "settings", "delete:<path>"…); only touched on the Fyne
	// thread.
	windows map[string]fyne.Window
	tray    *Tray
}

func newUI(ctx context.Context, a fyne.App, deps Deps) *ui {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	u := &ui{
		ctx:     ctx,
		app:     a,
		deps:    deps,
		log:     log,
		do:      fyne.Do,
		now:     time.Now,
		notify:  fyneNotifier(a),
		browser: &browser{dir: paths.RuntimeDir(), keep: time.Minute, getenv: getenv, run: startOpener, platform: a.OpenURL},
		windows: map[string]fyne.Window{},
	}
	u.openFolder = func(path string, failed func(error)) error { return u.open(openFolder, path, failed) }
	u.tray = newTray(u)
	return u
}

// background runs fn on its own goroutine; fn gets the UI's context and
// must return soon after it is done.
func (u *ui) background(fn func(ctx context.Context)) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		fn(u.ctx)
	}()
}

// follow subscribes to the manager's events, then runs load (if not nil),
// then hands the events in batches to handle on a background goroutine
// until ctx ends. Subscribing first means no change falls between what
// load reads and the first batch.
func (u *ui) follow(ctx context.Context, load func(), handle func(batch []workspace.Event)) {
	events, unsubscribe := u.deps.Workspaces.Subscribe()
	if load != nil {
		load()
	}
	u.background(func(context.Context) {
		defer unsubscribe()
		workspace.Follow(ctx, events, handle)
	})
}

// wait waits for the background work and the tray's event loop.
func (u *ui) wait() { u.wg.Wait() }

// window brings the open window of spec forward, or makes one with
// build, shows it, and remembers it until it closes; then closed (if not
// nil) runs. With window processes, spec's window opens in one of them
// instead, unless none can run.
func (u *ui) window(spec windowSpec, build func() (w fyne.Window, closed func())) {
	if u.procs != nil {
		u.procs.open(spec, func() { u.windowHere(spec.key(), build) })
		return
	}
	u.windowHere(spec.key(), build)
}

// windowHere is window in this process.
func (u *ui) windowHere(key string, build func() (w fyne.Window, closed func())) {
	if w, ok := u.windows[key]; ok {
		w.Show()
		w.RequestFocus()
		return
	}
	w, closed := build()
	u.windows[key] = w
	w.SetOnClosed(func() {
		if u.windows[key] == w {
			delete(u.windows, key)
		}
		if u.closed != nil {
			u.closed(key)
		}
		if closed != nil {
			closed()
		}
	})
	w.Show()
}

// showError shows err in a small window of its own: in tray mode there is
// no window to hang a dialog on.
func (u *ui) showError(title string, err error) {
	u.log.Warn(title, slog.Any("err", err))
	u.errors++
	u.showMessage(windowSpec{Kind: windowError, Title: title, Message: userMessage(err), Seq: u.errors})
}

// showMessage shows an error window: what failed (s.Title) and why
// (s.Message).
func (u *ui) showMessage(s windowSpec) {
	u.window(s, func() (fyne.Window, func()) {
		w := u.app.NewWindow("CodeHydra: " + s.Title)
		w.SetContent(errorContent(w, s.Title, s.Message))
		answerEscape(w, w.Close)
		return w, nil
	})
}

// copyText puts text on the clipboard.
func (u *ui) copyText(text string) {
	if u.clipboard != nil {
		u.clipboard(text)
		return
	}
	u.app.Clipboard().SetContent(text)
}

// userMessage is the sentence a user sees for err: the message of a
// *workspace.Error (its cause only for internal errors), else err's text.
func userMessage(err error) string {
	var we *workspace.Error
	if errors.As(err, &we) && we.Code != workspace.CodeInternal {
		return we.Message
	}
	return err.Error()
}

// workspaceTitle names a workspace for people: "project / name".
func workspaceTitle(ws workspace.Workspace) string {
	return fmt.Sprintf("%s / %s", baseName(ws.ProjectPath), ws.Name)
}

// errorContent is the body of an error window: what failed, why, and a
// button to close it.
func errorContent(w fyne.Window, title, msg string) fyne.CanvasObject {
	head := widget.NewLabelWithStyle(title+" failed", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	body := widget.NewLabel(msg)
	body.Wrapping = fyne.TextWrapWord
	w.Resize(fyne.NewSize(420, 0))
	return container.NewVBox(head, body, container.NewHBox(layout.NewSpacer(), widget.NewButton("Close", w.Close)))
}
