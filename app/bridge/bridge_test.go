package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"codehydra/app/internal/uitest"
	"codehydra/app/window"
	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/prepare"
	"codehydra/workspace"
)

func TestMain(m *testing.M) { uitest.Main(m, "bridge-test-home-") }

// bridged serves a over a real pipe pair, as the app serves a window
// process, and returns the window process's side.
func bridged(t *testing.T, a App) (*Client, *Server) {
	t.Helper()
	toChild, fromApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChild, toApp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if a.CopyText == nil {
		a.CopyText = func(string) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := NewServer(a)
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(ctx, PipeConn(fromChild, fromApp))
	}()
	c := NewClient(PipeConn(toChild, toApp), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() {
		c.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop when the window process closed it")
		}
		cancel()
	})
	return c, s
}

// tray is a window.Tray that says what the test sets.
type tray struct {
	busy    []string
	deletes map[string]window.DeleteProgress
}

func (f tray) BusyAgents() []string                             { return f.busy }
func (f tray) DeleteProgress(path string) window.DeleteProgress { return f.deletes[path] }

// failingSetup is a real manager over one repository whose project's
// setup fails, and a real Preparer of it, with the workspace feat
// created and its setup failed.
func failingSetup(t *testing.T) (*workspace.Manager, *settings.Store, *prepare.Preparer, workspace.Workspace) {
	t.Helper()
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	store := settings.NewStore(filepath.Join(t.TempDir(), "settings.json"))
	if err := store.Update(func(s *settings.Settings) {
		s.ProjectSetup = map[string]settings.ProjectSetup{repo: {Setup: `sh -c "echo npm ERR! missing script; exit 3"`}}
	}); err != nil {
		t.Fatal(err)
	}
	prep := prepare.New(prepare.Options{
		Setup: func(p string) (settings.ProjectSetup, bool) { return store.Get().SetupFor(p) },
		Start: func(workspace.Workspace) {},
	})
	t.Cleanup(prep.Close)
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	prep.Added(ws, true)
	testenv.WaitFor(t, "the setup to fail", 10*time.Second, func() bool {
		st, _ := prep.State(ws.Path)
		return st.Phase == prepare.PhaseFailed
	})
	return m, store, prep, ws
}

func TestBridgeGivesAWindowProcessTheAppAsItIs(t *testing.T) {
	m, store, prep, feat := failingSetup(t)
	agents := uitest.NewAgents()
	agents.Set(feat.Path, workspace.AgentStatus{Type: workspace.AgentIdle, Port: 4242})
	progress := window.DeleteProgress{Running: true, Step: workspace.StepRemoveWorktree}
	app := tray{busy: []string{"feat"}, deletes: map[string]window.DeleteProgress{feat.Path: progress}}
	c, _ := bridged(t, App{Deps: window.Deps{Workspaces: m, Settings: store, Tray: app, Prepare: prep, Agents: agents}})
	h, err := c.Hello()
	if err != nil {
		t.Fatal(err)
	}
	d := c.Deps(h)
	ws := d.Workspaces
	ctx := context.Background()
	repo := feat.ProjectPath

	events, cancel := ws.Subscribe()
	defer cancel()
	if got, want := ws.Projects(), m.Projects(); !reflect.DeepEqual(got, want) {
		t.Fatalf("projects over the bridge %+v, want %+v", got, want)
	}
	same := func(what string, got, want any, gotErr, wantErr error) {
		t.Helper()
		if gotErr != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s over the bridge: %+v, %v; want %+v, %v", what, got, gotErr, want, wantErr)
		}
	}
	gotList, gerr := ws.Workspaces(repo)
	wantList, werr := m.Workspaces(repo)
	same("Workspaces", gotList, wantList, gerr, werr)
	gotSt, gerr := ws.Status(ctx, feat.Path)
	wantSt, werr := m.Status(ctx, feat.Path)
	same("Status", gotSt, wantSt, gerr, werr)
	gotB, gerr := ws.Branches(ctx, repo)
	wantB, werr := m.Branches(ctx, repo)
	same("Branches", gotB, wantB, gerr, werr)
	gotBase, gerr := ws.DefaultBase(ctx, repo)
	wantBase, werr := m.DefaultBase(ctx, repo)
	same("DefaultBase", gotBase, wantBase, gerr, werr)

	// A create over the bridge is the app's: its event comes back.
	created, err := ws.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bridged"})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, func(e workspace.Event) bool {
		return e.Kind == workspace.EventWorkspaceAdded && e.Workspace.Path == created.Path
	})
	// A refusal keeps its code and message.
	_, gotErr := ws.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bad..name"})
	_, wantErr := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "bad..name"})
	var g, w *workspace.Error
	if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) || g.Code != w.Code || g.Message != w.Message {
		t.Errorf("a refused create over the bridge: %#v, want %#v", gotErr, wantErr)
	}
	note := "from the window"
	if err := ws.SetMetadata(ctx, created.Path, "note", &note); err != nil {
		t.Fatal(err)
	}
	if md, err := m.Metadata(ctx, created.Path); err != nil || md["note"] != note {
		t.Errorf("metadata set over the bridge: %v, %v", md, err)
	}
	if err := ws.Delete(ctx, created.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, _ := m.Workspaces(repo); slices.ContainsFunc(list, func(x workspace.Workspace) bool { return x.Path == created.Path }) {
		t.Error("the workspace deleted over the bridge is still there")
	}

	// The windows read the app's tray.
	if got := d.Tray.BusyAgents(); !slices.Equal(got, app.busy) {
		t.Errorf("busy agents over the bridge %q, want %q", got, app.busy)
	}
	if got := d.Tray.DeleteProgress(feat.Path); got != progress {
		t.Errorf("delete progress over the bridge %+v, want %+v", got, progress)
	}

	// The failed setup's reason and the preparer's refusal cross intact.
	st, ok := d.Prepare.State(feat.Path)
	var se *prepare.SetupError
	if !ok || st.Phase != prepare.PhaseFailed || !errors.As(st.Err, &se) || se.ExitCode != 3 {
		t.Errorf("the failed setup over the bridge: %+v, %v", st, ok)
	}
	if err := d.Prepare.StartAnyway(feat.Path); err != nil {
		t.Fatal(err)
	}
	if err := d.Prepare.Retry(feat.Path); !errors.Is(err, prepare.ErrNotFailed) {
		t.Errorf("retrying a setup that no longer failed: %v, want ErrNotFailed", err)
	}

	// The agent's address and password are the app's.
	if port, password, ok := d.Agents.OpencodeServer(feat.Path); port != 4242 || password != "pw-4242" || !ok {
		t.Errorf("OpencodeServer over the bridge: %d %q %v", port, password, ok)
	}
	if err := d.Agents.Restart(feat.Path); err != nil || !slices.Equal(agents.Restarted(), []string{feat.Path}) {
		t.Errorf("Restart over the bridge: %v, restarted %v", err, agents.Restarted())
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
	c, _ := bridged(t, App{Deps: window.Deps{Workspaces: uitest.NewWorkspaces(), Settings: store, Tray: tray{}}})
	h, err := c.Hello()
	if err != nil {
		t.Fatal(err)
	}
	s := c.Deps(h).Settings

	runs := 0
	err = s.Update(func(s *settings.Settings) {
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
	if s.Get().TerminalCommand != "xterm" {
		t.Error("Get over the bridge does not read the saved settings")
	}
}

func TestBridgeRaisesAnswersCopiesAndEndsWithTheWindowProcess(t *testing.T) {
	f := uitest.NewWorkspaces()
	raise, closeIt := make(chan struct{}, 1), make(chan struct{}, 1)
	answered, closed, copied := make(chan struct{}, 1), make(chan struct{}, 1), make(chan string, 1)
	c, s := bridged(t, App{
		Deps:     window.Deps{Workspaces: f, Settings: settings.NewStore(filepath.Join(t.TempDir(), "settings.json")), Tray: tray{}},
		Window:   window.Spec{Kind: window.KindConfirm, Title: "Quit?"},
		Raise:    raise,
		Close:    closeIt,
		Answered: func() { answered <- struct{}{} },
		Closed:   func() { closed <- struct{}{} },
		CopyText: func(text string) { copied <- text },
	})

	h, err := c.Hello()
	if err != nil || !s.Greeted() || h.Protocol != Protocol || h.Window.Key() != "confirm:Quit?" {
		t.Fatalf("hello: %+v, %v (greeted %v)", h, err, s.Greeted())
	}
	type signal struct {
		close bool
		err   error
	}
	got := make(chan signal, 1)
	wait := func() signal {
		go func() { s, err := c.WaitRaise(); got <- signal{s, err} }()
		return <-got
	}
	raise <- struct{}{}
	if s := wait(); s.err != nil || s.close {
		t.Fatalf("a raise: %+v", s)
	}
	closeIt <- struct{}{}
	if s := wait(); s.err != nil || !s.close {
		t.Fatalf("a close: %+v, want close", s)
	}
	c.Answered()
	<-answered
	c.CopyText("the attach command")
	if got := <-copied; got != "the attach command" {
		t.Errorf("copied %q", got)
	}
	c.Closed()
	<-closed
	if err := c.call("NoSuchMethod", noArgs, nil); err == nil {
		t.Error("an unknown method was answered")
	}

	// A window process that goes ends what waits for it in the app (its
	// subscription's wait for events, here), or the app would never reap
	// it: bridged's clean-up checks that Serve returns.
	events, _ := c.Deps(h).Workspaces.Subscribe()
	f.Publish(workspace.Event{Kind: workspace.EventProjectAdded})
	<-events // the next wait for events is in the app now, or soon
	c.Close()
}

// pipeConn must close both of its ends, or a window process would never
// see the app go.
func TestPipeConnClosesBothEnds(t *testing.T) {
	r, w := io.Pipe()
	r2, w2 := io.Pipe()
	c := PipeConn(r, w2)
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

// The fields of window.Deps that do not cross the bridge, and why.
var notBridged = map[string]string{
	"Logger": "each process logs to its own log; a window process's goes to the app's log through its stderr",
	"Getenv": "a window process inherits the app's environment",
}

// requiredDeps are the fields every app has; the others are optional.
var requiredDeps = []string{"Workspaces", "Settings", "Tray"}

// TestEveryDepsMethodAndFieldCrossesTheBridge keeps the bridge from
// drifting from window.Deps: every method of every interface field, and
// every func field, called in a window process reaches the same method
// of the app's Deps; every other field arrives with the app's value,
// unless notBridged says why it need not. An optional field the app lacks
// is absent in the window process too. A new field or method fails here
// until the bridge carries it.
func TestEveryDepsMethodAndFieldCrossesTheBridge(t *testing.T) {
	recs := map[string]*recorder{}
	rec := func(field string) *recorder {
		r := &recorder{}
		recs[field] = r
		return r
	}
	rotate, restart := rec("RotateToken"), rec("Restart")
	app := window.Deps{
		Workspaces:          rec("Workspaces"),
		Settings:            rec("Settings"),
		Tray:                rec("Tray"),
		Agents:              rec("Agents"),
		MCP:                 rec("MCP"),
		Gateway:             rec("Gateway"),
		Prepare:             rec("Prepare"),
		Landing:             rec("Landing"),
		RotateToken:         func() error { rotate.called("RotateToken"); return nil },
		Restart:             func() { restart.called("Restart") },
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv:              func(string) string { return "" },
		DefaultWorktreeRoot: "/home/me/worktrees",
	}
	deps := reflect.TypeFor[window.Deps]()
	appV := reflect.ValueOf(app)
	for i := range deps.NumField() {
		if appV.Field(i).IsZero() {
			t.Fatalf("this test's Deps leaves %s unset: set it, so that the bridge is checked for it", deps.Field(i).Name)
		}
	}
	c, _ := bridged(t, App{Deps: app})
	h, err := c.Hello()
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.ValueOf(c.Deps(h))

	for i := range deps.NumField() {
		f := deps.Field(i)
		v := got.Field(i)
		switch {
		case notBridged[f.Name] != "":
		case f.Type.Kind() == reflect.Interface:
			if v.IsNil() {
				t.Errorf("Deps.%s does not cross the bridge", f.Name)
				continue
			}
			for j := range f.Type.NumMethod() {
				m := f.Type.Method(j)
				callWithZeroArgs(v.Elem().MethodByName(m.Name))
				if !recs[f.Name].saw(m.Name) {
					t.Errorf("Deps.%s.%s in a window process does not reach the app's", f.Name, m.Name)
				}
			}
		case f.Type.Kind() == reflect.Func:
			if v.IsNil() {
				t.Errorf("Deps.%s does not cross the bridge", f.Name)
				continue
			}
			callWithZeroArgs(v)
			if !recs[f.Name].saw(f.Name) {
				t.Errorf("Deps.%s in a window process does not reach the app's", f.Name)
			}
		case !reflect.DeepEqual(v.Interface(), appV.Field(i).Interface()):
			t.Errorf("Deps.%s is %v in a window process, %v in the app", f.Name, v.Interface(), appV.Field(i).Interface())
		}
	}

	// An app without the optional Deps offers none.
	bare := window.Deps{Workspaces: app.Workspaces, Settings: app.Settings, Tray: app.Tray}
	c, _ = bridged(t, App{Deps: bare})
	if h, err = c.Hello(); err != nil {
		t.Fatal(err)
	}
	got = reflect.ValueOf(c.Deps(h))
	for i := range deps.NumField() {
		f := deps.Field(i)
		optional := (f.Type.Kind() == reflect.Interface || f.Type.Kind() == reflect.Func) && !slices.Contains(requiredDeps, f.Name)
		if optional && notBridged[f.Name] == "" && !got.Field(i).IsNil() {
			t.Errorf("Deps.%s is set in a window process of an app that has none", f.Name)
		}
	}
}

// callWithZeroArgs calls fn with zero arguments (a background context, a
// func that returns zeros) and calls what it returns that is a func()
// (Subscribe's cancel).
func callWithZeroArgs(fn reflect.Value) {
	t := fn.Type()
	args := make([]reflect.Value, t.NumIn())
	for i := range args {
		in := t.In(i)
		switch {
		case in == reflect.TypeFor[context.Context]():
			args[i] = reflect.ValueOf(context.Background())
		case in.Kind() == reflect.Func:
			args[i] = reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
				out := make([]reflect.Value, in.NumOut())
				for j := range out {
					out[j] = reflect.Zero(in.Out(j))
				}
				return out
			})
		default:
			args[i] = reflect.Zero(in)
		}
	}
	for _, r := range fn.Call(args) {
		if cancel, ok := r.Interface().(func()); ok {
			cancel()
		}
	}
}

// recorder is every interface of window.Deps at once: each method records
// its name and answers zeros.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) called(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name)
}

func (r *recorder) saw(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.calls, name)
}

func (r *recorder) Projects() []workspace.Project { r.called("Projects"); return nil }
func (r *recorder) Workspaces(string) ([]workspace.Workspace, error) {
	r.called("Workspaces")
	return nil, nil
}
func (r *recorder) Subscribe() (<-chan workspace.Event, func()) {
	r.called("Subscribe")
	return make(chan workspace.Event), func() {}
}
func (r *recorder) AddProject(context.Context, string) (workspace.Project, error) {
	r.called("AddProject")
	return workspace.Project{}, nil
}
func (r *recorder) RemoveProject(context.Context, string) error {
	r.called("RemoveProject")
	return nil
}
func (r *recorder) Create(context.Context, workspace.CreateOptions) (workspace.Workspace, error) {
	r.called("Create")
	return workspace.Workspace{}, nil
}
func (r *recorder) Delete(context.Context, string, workspace.DeleteOptions) error {
	r.called("Delete")
	return nil
}
func (r *recorder) Status(context.Context, string) (workspace.Status, error) {
	r.called("Status")
	return workspace.Status{}, nil
}
func (r *recorder) Changes(context.Context, string) (workspace.Changes, error) {
	r.called("Changes")
	return workspace.Changes{}, nil
}
func (r *recorder) BranchCreated(context.Context, string) (bool, error) {
	r.called("BranchCreated")
	return false, nil
}
func (r *recorder) Metadata(context.Context, string) (map[string]string, error) {
	r.called("Metadata")
	return nil, nil
}
func (r *recorder) SetMetadata(context.Context, string, string, *string) error {
	r.called("SetMetadata")
	return nil
}
func (r *recorder) Branches(context.Context, string) ([]string, error) {
	r.called("Branches")
	return nil, nil
}
func (r *recorder) ReusableBranches(context.Context, string) ([]string, error) {
	r.called("ReusableBranches")
	return nil, nil
}
func (r *recorder) DefaultBase(context.Context, string) (string, error) {
	r.called("DefaultBase")
	return "", nil
}

func (r *recorder) AgentStatus(string) workspace.AgentStatus {
	r.called("AgentStatus")
	return workspace.AgentStatus{}
}
func (r *recorder) OpencodeServer(string) (int, string, bool) {
	r.called("OpencodeServer")
	return 0, "", false
}
func (r *recorder) Restart(string) error       { r.called("Restart"); return nil }
func (r *recorder) RestartAll()                { r.called("RestartAll") }
func (r *recorder) FindBinary() (string, bool) { r.called("FindBinary"); return "", false }
func (r *recorder) QueuePrompt(string, workspace.FirstPrompt) (workspace.PromptDelivery, error) {
	r.called("QueuePrompt")
	return workspace.PromptDelivery{}, nil
}
func (r *recorder) PromptDelivery(string) (workspace.PromptDelivery, bool) {
	r.called("PromptDelivery")
	return workspace.PromptDelivery{}, false
}

func (r *recorder) Get() settings.Settings { r.called("Get"); return settings.Settings{} }
func (r *recorder) Update(fn func(*settings.Settings)) error {
	r.called("Update")
	fn(&settings.Settings{})
	return nil
}

func (r *recorder) Port() int          { r.called("Port"); return 0 }
func (r *recorder) URL() string        { r.called("URL"); return "" }
func (r *recorder) PortNotice() string { r.called("PortNotice"); return "" }

func (r *recorder) Statuses() []window.MCPServerStatus { r.called("Statuses"); return nil }
func (r *recorder) ToolChanges(string) []window.MCPToolChange {
	r.called("ToolChanges")
	return nil
}
func (r *recorder) AcceptToolChange(string, string, string) error {
	r.called("AcceptToolChange")
	return nil
}

func (r *recorder) State(string) (prepare.State, bool) {
	r.called("State")
	return prepare.State{}, false
}
func (r *recorder) Retry(string) error       { r.called("Retry"); return nil }
func (r *recorder) StartAnyway(string) error { r.called("StartAnyway"); return nil }

func (r *recorder) Diff(context.Context, string, workspace.DiffOptions) (workspace.Diff, error) {
	r.called("Diff")
	return workspace.Diff{}, nil
}
func (r *recorder) SendReview(string, workspace.Review) (workspace.ReviewDelivery, error) {
	r.called("SendReview")
	return workspace.ReviewDelivery{}, nil
}
func (r *recorder) Reviews(string) []workspace.ReviewDelivery { r.called("Reviews"); return nil }
func (r *recorder) Preflight(context.Context, string, workspace.MergeOptions) (workspace.Preflight, error) {
	r.called("Preflight")
	return workspace.Preflight{}, nil
}
func (r *recorder) Merge(context.Context, string, workspace.MergeOptions) (workspace.MergeResult, error) {
	r.called("Merge")
	return workspace.MergeResult{}, nil
}
func (r *recorder) UpdateFromBase(context.Context, string, workspace.UpdateMode) (workspace.UpdateResult, error) {
	r.called("UpdateFromBase")
	return workspace.UpdateResult{}, nil
}
func (r *recorder) CreatePullRequest(context.Context, string, workspace.PullRequestOptions) (workspace.PullRequest, error) {
	r.called("CreatePullRequest")
	return workspace.PullRequest{}, nil
}

func (r *recorder) BusyAgents() []string { r.called("BusyAgents"); return nil }
func (r *recorder) DeleteProgress(string) window.DeleteProgress {
	r.called("DeleteProgress")
	return window.DeleteProgress{}
}

// TestBridgeReviewsAndLandsAsTheApp: a window process's diff is the app's
// real one, page for page; its review, merge, update and pull request
// reach the app's Landing with every field, and their answers and
// refusals come back intact.
func TestBridgeReviewsAndLandsAsTheApp(t *testing.T) {
	repo := testenv.GitRepo(t, "repo")
	m := uitest.RealManager(t, repo)
	ctx := context.Background()
	ws, err := m.Create(ctx, workspace.CreateOptions{ProjectPath: repo, Name: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.CommitFile(t, ws.Path, "a.txt", "one\ntwo\nthree\n", "add a")
	testenv.WriteFile(t, filepath.Join(ws.Path, "b.txt"), "untracked\n")
	l := uitest.NewLanding(m)
	c, _ := bridged(t, App{Deps: window.Deps{Workspaces: m, Settings: settings.NewStore(filepath.Join(t.TempDir(), "settings.json")), Tray: tray{}, Landing: l}})
	h, err := c.Hello()
	if err != nil || !h.Landing {
		t.Fatalf("hello %+v, %v: want Landing offered", h, err)
	}
	land := c.Deps(h).Landing

	for _, o := range []workspace.DiffOptions{{}, {File: "a.txt"}, {Offset: 5, MaxBytes: 20}} {
		got, gerr := land.Diff(ctx, ws.Path, o)
		want, werr := m.Diff(ctx, ws.Path, o)
		if gerr != nil || werr != nil || !reflect.DeepEqual(got, want) || len(want.Files) != 2 {
			t.Errorf("Diff %+v over the bridge: %+v, %v; want %+v, %v", o, got, gerr, want, werr)
		}
	}
	if _, err := land.Diff(ctx, ws.Path, workspace.DiffOptions{File: "../out"}); workspace.CodeOf(err) != workspace.CodeInvalidInput {
		t.Errorf("a refused diff over the bridge: %v, want its code", err)
	}

	review := workspace.Review{Summary: "tidy up", Comments: []workspace.ReviewComment{{File: "a.txt", Line: 2, EndLine: 3, Text: "why?"}, {File: "b.txt", Text: "drop it"}}}
	d, err := land.SendReview(ws.Path, review)
	if err != nil || d.ID == "" || d.Comments != 2 {
		t.Fatalf("SendReview over the bridge: %+v, %v", d, err)
	}
	if sent := l.Sent(); len(sent) != 1 || !reflect.DeepEqual(sent[0], review) {
		t.Errorf("the app got the review %+v, want %+v", sent, review)
	}
	l.Deliver(ws.Path, d.ID, workspace.DeliveryFailed, "the agent is gone")
	if got, want := land.Reviews(ws.Path), l.Reviews(ws.Path); !reflect.DeepEqual(got, want) || got[0].Error != "the agent is gone" {
		t.Errorf("Reviews over the bridge %+v, want %+v", got, want)
	}

	pf := workspace.Preflight{Target: "main", Uncommitted: []string{"b.txt"}, CheckedOutAt: repo, Blockers: []string{"commit b.txt first"}}
	l.OnPreflight(func(workspace.MergeOptions) (workspace.Preflight, error) { return pf, nil })
	o := workspace.MergeOptions{Strategy: workspace.StrategySquash, Target: "develop", Message: "squashed"}
	if got, err := land.Preflight(ctx, ws.Path, o); err != nil || !reflect.DeepEqual(got, pf) {
		t.Errorf("Preflight over the bridge: %+v, %v", got, err)
	}
	refusal := workspace.Errorf(workspace.CodeConflict, "main is checked out at %s with changes; commit them first", repo)
	l.OnMerge(func(workspace.MergeOptions) (workspace.MergeResult, error) { return workspace.MergeResult{}, refusal })
	if _, err := land.Merge(ctx, ws.Path, o); workspace.CodeOf(err) != workspace.CodeConflict || window.UserMessage(err) != refusal.Message {
		t.Errorf("a refused merge over the bridge: %v", err)
	}
	if got := l.Merges(); len(got) != 1 || got[0] != o || l.Preflights()[0] != o {
		t.Errorf("the app got merge options %+v and %+v, want %+v", got, l.Preflights(), o)
	}
	if res, err := land.UpdateFromBase(ctx, ws.Path, workspace.UpdateMerge); err != nil || res.Mode != workspace.UpdateMerge || !res.Updated {
		t.Errorf("UpdateFromBase over the bridge: %+v, %v", res, err)
	}
	if pr, err := land.CreatePullRequest(ctx, ws.Path, workspace.PullRequestOptions{Title: "t"}); err != nil || pr.URL != "https://example.com/pr/1" {
		t.Errorf("CreatePullRequest over the bridge: %+v, %v", pr, err)
	}
}
