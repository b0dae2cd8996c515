package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"codehydra/internal/settings"
	"codehydra/prepare"
	"codehydra/workspace"
)

// bridged serves h's UI over a real pipe pair, as the app serves a window
// process, and returns the window process's side.
func bridged(t *testing.T, h *harness, b *bridgeServer) *bridgeClient {
	t.Helper()
	toChild, fromApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChild, toApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b.u = h.u
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.serve(h.u.ctx, pipeConn{fromChild, fromApp})
	}()
	c := newBridgeClient(pipeConn{toChild, toApp}, h.u.log)
	t.Cleanup(func() {
		c.rpc.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop when the window process closed it")
		}
	})
	return c
}

func TestBridgeGivesAWindowProcessTheAppAsItIs(t *testing.T) {
	f := newFailedSetupTray(t)
	m := f.h.u.deps.Workspaces
	agents := newFakeAgents()
	agents.set(f.ws.Path, workspace.AgentStatus{Type: workspace.AgentIdle, Port: 4242})
	h := newHarness(t, Deps{Workspaces: m, Settings: f.store, Prepare: f.prep, Agents: agents})
	h.startTray()
	c := bridged(t, h, &bridgeServer{})
	ctx := context.Background()
	repo := f.ws.ProjectPath

	events, cancel := c.Subscribe()
	defer cancel()
	if got, want := c.Projects(), m.Projects(); !reflect.DeepEqual(got, want) {
		t.Fatalf("projects over the bridge %+v, want %+v", got, want)
	}
	same := func(what string, got, want any, gotErr, wantErr error) {
		t.Helper()
		if gotErr != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s over the bridge: %+v, %v; want %+v, %v", what, got, gotErr, want, wantErr)
		}
	}
	gotList, gerr := c.Workspaces(repo)
	wantList, werr := m.Workspaces(repo)
	same("Workspaces", gotList, wantList, gerr, werr)
	gotSt, gerr := c.Status(ctx, f.ws.Path)
	wantSt, werr := m.Status(ctx, f.ws.Path)
	same("Status", gotSt, wantSt, gerr, werr)
	gotB, gerr := c.Branches(ctx, repo)
	wantB, werr := m.Branches(ctx, repo)
	same("Branches", gotB, wantB, gerr, werr)
	gotBase, gerr := c.DefaultBase(ctx, repo)
	wantBase, werr := m.DefaultBase(ctx, repo)
	same("DefaultBase", gotBase, wantBase, gerr, werr)

	// A create over the bridge is the app's: its event comes back.
	ws, err := c.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bridged"})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, func(e workspace.Event) bool {
		return e.Kind == workspace.EventWorkspaceAdded && e.Workspace.Path == ws.Path
	})
	// A refusal keeps its code and message.
	_, gotErr := c.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bad..name"})
	_, wantErr := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bad..name"})
	var g, w *workspace.Error
	if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) || g.Code != w.Code || g.Message != w.Message {
		t.Errorf("a refused create over the bridge: %#v, want %#v", gotErr, wantErr)
	}
	note := "from the window"
	if err := c.SetMetadata(ctx, ws.Path, "note", &note); err != nil {
		t.Fatal(err)
	}
	if md, err := m.Metadata(ctx, ws.Path); err != nil || md["note"] != note {
		t.Errorf("metadata set over the bridge: %v, %v", md, err)
	}
	if err := c.Delete(ctx, ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, _ := m.Workspaces(repo); slices.ContainsFunc(list, func(x workspace.Workspace) bool { return x.Path == ws.Path }) {
		t.Error("the workspace deleted over the bridge is still there")
	}

	// The windows read the app's tray state: feat's failed setup is in it.
	h.waitFor("feat's failed setup in the tray state over the bridge", func() bool {
		var tray State
		if err := c.call("TrayState", noArgs, &tray); err != nil {
			t.Fatal(err)
		}
		for _, p := range tray.Projects {
			for _, w := range p.Workspaces {
				if w.Workspace.Path == f.ws.Path {
					return strings.Contains(w.SetupFailed, "exit code 3")
				}
			}
		}
		return false
	})

	// The failed setup's reason and the preparer's refusal cross intact.
	st, ok := c.State(f.ws.Path)
	var se *prepare.SetupError
	if !ok || st.Phase != prepare.PhaseFailed || !errors.As(st.Err, &se) || se.ExitCode != 3 {
		t.Errorf("the failed setup over the bridge: %+v, %v", st, ok)
	}
	if err := c.StartAnyway(f.ws.Path); err != nil {
		t.Fatal(err)
	}
	if err := c.Retry(f.ws.Path); !errors.Is(err, prepare.ErrNotFailed) {
		t.Errorf("retrying a setup that no longer failed: %v, want ErrNotFailed", err)
	}

	// The agent's address and password are the app's.
	if port, password, ok := c.OpencodeServer(f.ws.Path); port != 4242 || password != "pw-4242" || !ok {
		t.Errorf("OpencodeServer over the bridge: %d %q %v", port, password, ok)
	}
	if err := c.Restart(f.ws.Path); err != nil || !slices.Equal(agents.restarted(), []string{f.ws.Path}) {
		t.Errorf("Restart over the bridge: %v, restarted %v", err, agents.restarted())
	}
}

// waitEvent waits for an event on events that match accepts.
func waitEvent(t *testing.T, events <-chan workspace.Event, match func(workspace.Event) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the events ended")
			}
			if match(e) {
				return
			}
		case <-deadline:
			t.Fatal("no such event")
		}
	}
}

func TestErrorsCrossTheBridgeWithTheirTextCodeAndCause(t *testing.T) {
	internal := &workspace.Error{Code: workspace.CodeInternal, Message: "could not save", Err: errors.New("disk full")}
	for _, err := range []error{
		internal,
		&workspace.Error{Code: workspace.CodeConflict, Message: "busy"},
		fmt.Errorf("wrapped: %w", internal),
		&prepare.SetupError{Reason: "exited with code 3", Tail: []string{"npm ERR!"}, ExitCode: 3},
		prepare.ErrNotFailed,
		errSettingsChanged,
		errors.New("plain"),
	} {
		got := fromWire(toWire(err))
		if got.Error() != err.Error() {
			t.Errorf("%v came back as %q", err, got.Error())
		}
		var want, back *workspace.Error
		if errors.As(err, &want) && err == error(want) && (!errors.As(got, &back) || back.Code != want.Code || back.Message != want.Message) {
			t.Errorf("%v lost its code or message: %#v", err, got)
		}
		if errors.Is(err, prepare.ErrNotFailed) != errors.Is(got, prepare.ErrNotFailed) ||
			errors.Is(err, errSettingsChanged) != errors.Is(got, errSettingsChanged) {
			t.Errorf("%v lost its identity: %#v", err, got)
		}
	}
}

func TestBridgeSettingsUpdateRunsAgainOnSettingsChangedMeanwhile(t *testing.T) {
	store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	h := newHarness(t, Deps{Workspaces: newFake(), Settings: store})
	c := bridged(t, h, &bridgeServer{})

	runs := 0
	err := c.Update(func(s *settings.Settings) {
		runs++
		if runs == 1 {
			// Another window saves between this one's read and its save.
			if err := store.Update(func(s *settings.Settings) { s.EditorCommand = "code" }); err != nil {
				t.Fatal(err)
			}
		}
		s.TerminalCommand = "xterm"
	})
	if err != nil {
		t.Fatal(err)
	}
	got := store.Get()
	if runs != 2 || got.EditorCommand != "code" || got.TerminalCommand != "xterm" {
		t.Errorf("after %d runs: editor %q, terminal %q; want both changes kept", runs, got.EditorCommand, got.TerminalCommand)
	}
	if c.Get().TerminalCommand != "xterm" {
		t.Error("Get over the bridge does not read the saved settings")
	}
}

func TestBridgeRaisesAnswersCopiesAndEndsWithTheWindowProcess(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: newFake()})
	raise := make(chan struct{}, 1)
	answered, closed := false, make(chan struct{}, 1)
	b := &bridgeServer{raise: raise, answered: func() { answered = true }, closed: func() { closed <- struct{}{} }}
	c := bridged(t, h, b)

	if _, err := c.hello(); err != nil || !b.wasGreeted() {
		t.Fatalf("hello: %v", err)
	}
	raised := make(chan error, 1)
	go func() { raised <- c.call("WaitRaise", noArgs, nil) }()
	raise <- struct{}{}
	if err := <-raised; err != nil {
		t.Fatalf("a raise: %v", err)
	}
	if err := c.call("Answered", noArgs, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.call("CopyText", "the attach command", nil); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the answer and the copy on the app's thread", func() bool {
		return answered && h.app.Clipboard().Content() == "the attach command"
	})
	if err := c.call("Closed", noArgs, nil); err != nil {
		t.Fatal(err)
	}
	<-closed
	if err := c.call("NoSuchMethod", noArgs, nil); err == nil {
		t.Error("an unknown method was answered")
	}

	// A window process that goes ends what waits for it in the app (its
	// subscription's wait for events, here), or the app would never reap
	// it: bridged's clean-up checks that serve returns.
	events, _ := c.Subscribe()
	h.u.deps.Workspaces.(*fakeWorkspaces).Publish(workspace.Event{Kind: workspace.EventProjectAdded})
	<-events // the next wait for events is in the app now, or soon
	c.rpc.Close()
}

func TestAWindowOpensInTheAppWhenNoWindowProcessCanStart(t *testing.T) {
	h := newHarness(t, Deps{Workspaces: newFake()})
	h.u.procs = newWindowProcs(h.u, []string{filepath.Join(t.TempDir(), "no-such-codehydra")})
	h.u.openSettings()
	h.waitFor("the settings window in the app", func() bool { return h.windowOpen("CodeHydra settings") })
}

// pipeConn must close both of its ends, or a window process would never
// see the app go.
func TestPipeConnClosesBothEnds(t *testing.T) {
	r, w := io.Pipe()
	r2, w2 := io.Pipe()
	c := pipeConn{r, w2}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Error("the read end is still open")
	}
	if _, err := r2.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the write end: %v, want EOF", err)
	}
}
