// Package app is CodeHydra's desktop UI, built with Fyne: the tray process
// (Run) with its icon, menu and desktop notifications, and the window
// process (RunWindow) that each of its windows opens in. Where the desktop
// has no tray (no StatusNotifier host), a small main window shows the same
// menu so the app is never invisible.
//
// The windows themselves are package window, and how a window process
// reaches the tray process is package bridge. The tray reaches the domain
// only through the small interfaces of package window; main wires them to
// workspace.Manager, the opencode supervisor, the settings store and the
// MCP server.
package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"

	"codehydra/app/window"
	"codehydra/assets"
)

// ErrNoDisplay is returned by Run when there is no display to show a UI on
// (on Linux and the BSDs: neither DISPLAY nor WAYLAND_DISPLAY is set; on
// Windows: no window can be made, as in a service's session or under wine
// without X). Its text says which. The caller should say so and run
// headless.
var ErrNoDisplay = errors.New("no display: " + noDisplay)

// DefaultAppID is the Fyne application ID used when Deps.AppID is empty.
const DefaultAppID = "io.github.codehydra"

// MCPServerStatus is how one of the user's MCP servers is doing, as the
// Settings window shows it; main adapts the gateway's statuses to it.
type MCPServerStatus = window.MCPServerStatus

// MCPToolChange is a tool of the user's MCP servers withheld because its
// definition changed since it was pinned, as Settings shows it.
type MCPToolChange = window.MCPToolChange

// Workspaces is the part of *workspace.Manager that the tray uses: what
// its windows use, and switching one of the user's MCP servers off for one
// workspace, which only the tray's menu does (so it does not cross to the
// window processes).
type Workspaces interface {
	window.Workspaces
	SetMCPServerOff(ctx context.Context, wsPath, server string, off bool) error
}

// Deps is what the UI needs from the rest of the app.
type Deps struct {
	// Workspaces and Settings are required.
	Workspaces Workspaces
	Settings   window.SettingsStore
	// Agents may be nil (no opencode): agents then show as "no agent" and
	// cannot be restarted.
	Agents window.Agents
	// MCP may be nil while no server runs.
	MCP window.MCPServer
	// Gateway may be nil: the MCP servers tab then shows the configured
	// servers without their state.
	Gateway window.MCPGateway
	// Prepare may be nil: created workspaces then show no setup progress.
	Prepare window.Preparation
	// Landing may be nil: the workspaces' submenus then offer no review,
	// merge, update or pull request.
	Landing window.Landing
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

	// Answers may be nil: the agents' pending requests are then listed
	// in their workspaces' submenus but cannot be answered there.
	Answers Answerer
	// Hibernation, when set, gives each workspace *Hibernate* and *Wake*,
	// and wakes a hibernated agent for *Open agent in browser* and *Copy
	// attach command*.
	Hibernation Hibernation

	// Previews, when set, gives each workspace an "Open http://127.0.0.1:PORT"
	// per port its processes listen on; DevServers *Start dev server* and
	// *Stop dev server* where its project has a run command. Both are read
	// every few seconds while the app runs.
	Previews   Previews
	DevServers DevServers

	// Questions, when set, brings the questions of the gateway's MCP
	// servers that the calling client cannot ask: each opens a window.
	Questions Questions

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

	hostCtx, hostCancel := context.WithTimeout(ctx, 2*time.Second)
	trayHost := deps.TrayHost
	if trayHost == nil {
		trayHost = func(ctx context.Context) bool { return hasTrayHost(ctx, getenv) }
	}
	hasHost := trayHost(hostCtx)
	hostCancel()
	_, isDesktop := a.(desktop.App)
	withTray := hasHost && isDesktop
	// With a tray, the windows open in window processes of their own;
	// without one, in the main window's process.
	var windowCommand []string
	if withTray {
		windowCommand = deps.WindowCommand
	}

	uiCtx, cancel := context.WithCancel(ctx)
	t := newTray(uiCtx, a, deps, fyne.Do, windowCommand)
	t.notifier = desktopNotifier(a, getenv)
	t.asker = desktopAsker(getenv)
	if withTray {
		t.view = startSystray(a, trayTitle(a), fyne.Do)
		// Fyne quits when its last window closes; this one, never shown,
		// keeps a window that opens here (no window process could start)
		// from quitting the app as it closes. Unshown, it creates no GL
		// context.
		a.NewWindow("CodeHydra")
	} else {
		t.log.Info("no system tray; showing the main window",
			slog.Bool("trayHost", hasHost), slog.Bool("desktop", isDesktop))
		t.main = newMainWindow(a)
	}
	t.start()

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
	t.wait()
	return nil
}

// windows are the Deps that the windows get of d, with tray's state and
// log as the logger.
func (d Deps) windows(tray window.Tray, log *slog.Logger) window.Deps {
	return window.Deps{
		Workspaces:          d.Workspaces,
		Settings:            d.Settings,
		Tray:                tray,
		Agents:              d.Agents,
		MCP:                 d.MCP,
		Gateway:             d.Gateway,
		Prepare:             d.Prepare,
		Landing:             d.Landing,
		RotateToken:         d.RotateToken,
		Restart:             d.Restart,
		Logger:              log,
		Getenv:              d.Getenv,
		DefaultWorktreeRoot: d.DefaultWorktreeRoot,
	}
}
