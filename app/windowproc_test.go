package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"codehydra/app/bridge"
	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

func TestAWindowOpensInTheAppWhenNoWindowProcessCanStart(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: uitest.NewWorkspaces()}, filepath.Join(t.TempDir(), "no-such-codehydra"))
	h.tray.win.Open(window.Spec{Kind: window.KindSettings})
	h.waitFor("the settings window in the app", func() bool { return h.windowOpen("CodeHydra settings") })
}

// A window process is served what the tray's own windows get: the tray's
// state, the app's parts, and what only the tray process does, on its
// Fyne thread; its Restart quits the app, as the settings window's does
// in the app itself.
func TestAWindowProcessIsServedTheTrayAndTheAppsThread(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentBusy)
	ws := f.AddWorkspace("proj", "going")
	restarts := 0
	h := newHarness(t, Deps{Workspaces: f, Agents: agents, Restart: func() { restarts++ }}, "codehydra-window")
	h.startTray()
	f.Publish(workspace.Event{Kind: workspace.EventDeleteProgress, Workspace: ws, Step: workspace.StepStopAgent})
	h.waitFor("the tray to see the delete", func() bool { return find(h.view.menu(), "… going (deleting)") != nil })

	answered := false
	spec := window.Spec{Kind: window.KindConfirm, Title: "Quit?", Answered: func() { answered = true }}
	closed := make(chan struct{}, 1)
	served := h.tray.procs.served(spec, &windowSignals{raise: make(chan struct{}), close: make(chan struct{})}, func() { closed <- struct{}{} })
	c := serve(t, h.tray.ctx, served)
	hello, err := c.Hello()
	if err != nil || hello.Window.Key() != spec.Key() {
		t.Fatalf("hello %+v, %v; want the question's window", hello, err)
	}
	d := c.Deps(hello)
	if got := d.Tray.BusyAgents(); !slices.Equal(got, []string{"feat"}) {
		t.Errorf("busy agents in the window process %q, want feat", got)
	}
	if got := d.Tray.DeleteProgress(ws.Path); !got.Running || got.Step != workspace.StepStopAgent {
		t.Errorf("delete in the window process %+v, want the tray's", got)
	}
	if d.Agents == nil || d.Prepare != nil || d.RotateToken != nil {
		t.Errorf("the window process has agents %v, setup %v, rotate %v; want what the app has", d.Agents != nil, d.Prepare != nil, d.RotateToken != nil)
	}

	c.CopyText("the attach command")
	c.Answered()
	d.Restart()
	c.Closed()
	<-closed
	h.waitFor("the copy, the answer and the restart on the app's thread", func() bool {
		return h.app.Clipboard().Content() == "the attach command" && answered && restarts == 1 && h.app.Quits() == 1
	})
}

// serve serves a to a window process's end of a pipe pair, until the
// test ends.
func serve(t *testing.T, ctx context.Context, a bridge.App) *bridge.Client {
	t.Helper()
	toChild, fromApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChild, toApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		bridge.NewServer(a).Serve(ctx, bridge.PipeConn(fromChild, fromApp))
	}()
	c := bridge.NewClient(bridge.PipeConn(toChild, toApp), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() {
		c.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop when the window process closed it")
		}
	})
	return c
}

// The windows get every part of the app that they share with the tray:
// a field of window.Deps that Deps.windows leaves unset fails here.
func TestTheWindowsGetWhatTheTrayHasOfTheApp(t *testing.T) {
	f, _, agents := uitest.OneWorkspace(uitest.AgentIdle)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	deps := Deps{
		Workspaces:          f,
		Settings:            settings.NewStore(filepath.Join(t.TempDir(), "settings.json")),
		Agents:              agents,
		MCP:                 uitest.MCP{InUse: 1},
		Gateway:             gateway{},
		Prepare:             preparation{},
		Landing:             uitest.NewLanding(nil),
		RotateToken:         func() error { return nil },
		Restart:             func() {},
		Getenv:              func(string) string { return "" },
		DefaultWorktreeRoot: "/home/me/worktrees",
	}
	tr := &Tray{}
	got := reflect.ValueOf(deps.windows(tr, log))
	from := reflect.ValueOf(deps)
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		v := got.Field(i)
		if v.IsZero() {
			t.Errorf("the windows get no %s", name)
			continue
		}
		var want any
		switch name {
		case "Tray":
			want = window.Tray(tr)
		case "Logger":
			want = log
		default:
			src := from.FieldByName(name)
			if !src.IsValid() {
				t.Errorf("the windows' %s is not one of the app's Deps", name)
				continue
			}
			if src.Kind() == reflect.Func {
				if v.Pointer() != src.Pointer() {
					t.Errorf("the windows' %s is not the app's", name)
				}
				continue
			}
			want = src.Interface()
		}
		if v.Interface() != want {
			t.Errorf("the windows' %s is %v, want %v", name, v.Interface(), want)
		}
	}
}

type gateway struct{}

func (gateway) Statuses() []MCPServerStatus                   { return nil }
func (gateway) ToolChanges(string) []window.MCPToolChange     { return nil }
func (gateway) AcceptToolChange(string, string, string) error { return nil }

type preparation struct{}

func (preparation) State(string) (p prepare.State, ok bool) { return p, false }
func (preparation) Retry(string) error                      { return nil }
func (preparation) StartAnyway(string) error                { return nil }
