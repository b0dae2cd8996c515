package mcp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

func TestListenFallsBackToDynamicPortWhenFixedPortIsTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port

	h := newHarness(t, func(o *Options) { o.Addr = "127.0.0.1:" + strconv.Itoa(taken) })
	if h.srv.Port() == taken || h.srv.Port() == 0 {
		t.Fatalf("port %d, want a free one other than the taken %d", h.srv.Port(), taken)
	}
	if want := "http://127.0.0.1:" + strconv.Itoa(h.srv.Port()) + "/mcp"; h.srv.URL() != want {
		t.Fatalf("URL %s, want %s", h.srv.URL(), want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, "taken by another program") ||
		!strings.Contains(logs, "now reach that program") {
		t.Fatalf("no plain warning logged: %s", logs)
	}
	notice := h.srv.PortNotice()
	if !strings.Contains(h.logs.String(), "address already in use") {
		t.Errorf("the warning does not say why the port was refused: %s", h.logs.String())
	}
	for _, want := range []string{strconv.Itoa(taken), strconv.Itoa(h.srv.Port()), "is taken", "copy MCP configs again"} {
		if !strings.Contains(notice, want) {
			t.Errorf("PortNotice() = %q, want %q in it", notice, want)
		}
	}
	// The server answers on the port it reports.
	if res := call(t, h.session(""), ToolProjectList, nil); res.IsError {
		t.Fatal(text(t, res))
	}
}

func TestListenBindsOnceOnAFixedFreePort(t *testing.T) {
	port := testenv.FreePort(t)

	h := newHarness(t, func(o *Options) { o.Addr = "127.0.0.1:" + strconv.Itoa(port) })
	if h.srv.Port() != port {
		t.Skipf("port %d was taken meanwhile", port)
	}
	if n := h.srv.PortNotice(); n != "" {
		t.Errorf("PortNotice() = %q on the port asked for", n)
	}
	if err := h.srv.Listen(); err != nil {
		t.Fatal(err)
	}
	if h.srv.Port() != port {
		t.Fatalf("second Listen moved the port to %d", h.srv.Port())
	}
	if strings.Contains(h.logs.String(), "dynamic port") {
		t.Fatal("warned although the fixed port was free")
	}
}

func TestNewRefusesNonLoopbackAddressesAndMissingParts(t *testing.T) {
	tok, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.NewManager(workspace.Options{})
	for _, o := range []Options{
		{Addr: "0.0.0.0:0", Token: tok, Workspaces: ws},
		{Addr: "192.0.2.1:0", Token: tok, Workspaces: ws},
		{Addr: "example.com:0", Token: tok, Workspaces: ws},
		{Addr: "127.0.0.1", Token: tok, Workspaces: ws},
		{Workspaces: ws},
		{Token: tok},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestManySessionsAtOnceEachGetTheirOwnID(t *testing.T) {
	h := newHarness(t)
	ids := map[string]bool{}
	for range 5 {
		cs := h.session("")
		if cs.ID() == "" || ids[cs.ID()] {
			t.Fatalf("session id %q missing or reused", cs.ID())
		}
		ids[cs.ID()] = true
	}
	if n := h.srv.Sessions(); n != 5 {
		t.Fatalf("Sessions() = %d, want 5", n)
	}
}

func TestShutdownWithOpenSessionsLeavesNoGoroutines(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws, err := mgr.Create(context.Background(), workspace.CreateOptions{ProjectPath: project, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	token, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	srv, err := New(Options{Token: token, Workspaces: mgr, AuditPath: filepath.Join(t.TempDir(), "audit.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { served <- srv.Serve(context.Background()) }()

	var sessions []*sdk.ClientSession
	var transports []*http.Transport
	for i := range 3 {
		tr := &http.Transport{}
		transports = append(transports, tr)
		hdr := http.Header{"Authorization": {"Bearer " + token.Value()}, WorkspaceHeader: {ws.Path}}
		client := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
			Endpoint:   srv.URL(),
			HTTPClient: &http.Client{Transport: &headerTransport{base: tr, header: hdr}},
			MaxRetries: -1,
			// One client keeps the standalone event stream (a GET that
			// never ends by itself) open.
			DisableStandaloneSSE: i != 0,
		}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolSessions})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, cs)
		if res := call(t, cs, ToolGetStatus, nil); res.IsError {
			t.Fatal(text(t, res))
		}
	}
	if n := srv.Sessions(); n != 3 {
		t.Fatalf("Sessions() = %d, want 3", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %s: open sessions held it up", d)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v after Shutdown", err)
	}
	if n := srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(strings.TrimSuffix(srv.URL(), Path), "http://"), time.Second); err == nil {
		t.Fatal("the port still accepts connections")
	}
	for _, cs := range sessions {
		cs.Close()
	}
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	settled := false
	defer func() {
		if !settled {
			buf := make([]byte, 1<<20)
			t.Logf("%d goroutines before, %d after shutdown:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
	}()
	testenv.WaitFor(t, "the goroutines to end after shutdown", 10*time.Second, func() bool { return runtime.NumGoroutine() <= before })
	settled = true
}

func TestServeStopsWhenItsContextEnds(t *testing.T) {
	isolateGit(t)
	token, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Token: token, Workspaces: workspace.NewManager(workspace.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	waitFor(t, "listening", func() bool { return srv.Port() != 0 })
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if err := srv.Listen(); err == nil {
		t.Fatal("Listen after shutdown succeeded")
	}
}

// markerListener notes when a connection has written marker to a client.
// The write of the marker is slowed down, as on a busy machine, so that
// work started before the write completes shows up as such.
type markerListener struct {
	net.Listener
	marker []byte
	delay  time.Duration
	seen   *atomic.Bool
}

func (l *markerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &markerConn{Conn: c, l: l}, nil
}

type markerConn struct {
	net.Conn
	l *markerListener
}

func (c *markerConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, c.l.marker) {
		time.Sleep(c.l.delay)
	}
	n, err := c.Conn.Write(p)
	if bytes.Contains(p[:n], c.l.marker) {
		c.l.seen.Store(true)
	}
	return n, err
}

// stopRecorder is the agent supervisor as the workspace domain sees it: it
// notes whether the delete's answer had left the server when the agent was
// told to stop, and can hold the stop until released.
type stopRecorder struct {
	answered func() bool
	hold     chan struct{}

	mu      sync.Mutex
	stops   []string
	ordered []bool
}

func (r *stopRecorder) AgentStatus(string) workspace.AgentStatus { return workspace.NoAgent }

func (r *stopRecorder) StopAgent(ctx context.Context, path string) error {
	r.mu.Lock()
	r.stops = append(r.stops, path)
	r.ordered = append(r.ordered, r.answered())
	r.mu.Unlock()
	if r.hold != nil {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *stopRecorder) snapshot() ([]string, []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.stops...), append([]bool(nil), r.ordered...)
}

func TestWorkspaceDeleteAnswersFirstThenDeletesInTheBackground(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	answered := &atomic.Bool{}
	rec := &stopRecorder{answered: answered.Load, hold: make(chan struct{})}
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir(), Agents: rec})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, stopEvents := mgr.Subscribe()
	defer stopEvents()
	ws, err := mgr.Create(context.Background(), workspace.CreateOptions{ProjectPath: project, Name: "doomed"})
	if err != nil {
		t.Fatal(err)
	}

	token, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Token: token, Workspaces: mgr})
	if err != nil {
		t.Fatal(err)
	}
	srv.listen = func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		return &markerListener{Listener: ln, marker: []byte(`"structuredContent":{"started":true}`), delay: 300 * time.Millisecond, seen: answered}, err
	}
	h := &harness{t: t, srv: srv, token: token, project: project, mgr: mgr}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		<-served
	}()

	// The workspace's own agent calls (the user's call waits for the
	// delete instead: TestTheUsersWorkspaceDeleteAnswersTheTeardownsFailure).
	cs := h.sessionAs(h.tokenOf(ws.Path), ws.Path)
	var out map[string]any
	okJSON(t, call(t, cs, ToolDelete, nil), &out)
	if !jsonEqual(t, mustJSON(t, out), []byte(`{"started":true}`)) {
		t.Fatalf("delete answered %v", out)
	}
	// While the agent stop is held, a second delete of the same workspace
	// is a conflict (the workspace still resolves).
	waitFor(t, "the agent to be told to stop", func() bool { s, _ := rec.snapshot(); return len(s) == 1 })
	if code, _ := errCode(t, call(t, cs, ToolDelete, nil)); code != workspace.CodeConflict {
		t.Fatalf("second delete: %s, want conflict", code)
	}
	// The calling agent's session goes away with it; the delete goes on.
	cs.Close()
	close(rec.hold)
	waitFor(t, "the workspace to be gone", func() bool {
		_, err := mgr.Resolve(ws.Path)
		return workspace.CodeOf(err) == workspace.CodeWorkspaceNotFound
	})
	stops, ordered := rec.snapshot()
	if len(stops) != 1 || stops[0] != ws.Path || !ordered[0] {
		t.Fatalf("stops %v; answer sent before the stop: %v", stops, ordered)
	}
	var steps []workspace.DeleteStep
	waitFor(t, "the done event", func() bool {
		for {
			select {
			case e := <-events:
				if e.Kind == workspace.EventDeleteProgress {
					steps = append(steps, e.Step)
				}
			default:
				return len(steps) > 0 && steps[len(steps)-1] == workspace.StepDone
			}
		}
	})
	if steps[0] != workspace.StepStopAgent {
		t.Fatalf("delete steps %v", steps)
	}
	if out := testenv.Git(t, project, "branch", "--list", "doomed"); out != "" {
		t.Fatalf("branch left: %q", out)
	}
}

func TestWorkspaceDeleteKeepsTheBranchWhenAsked(t *testing.T) {
	h := newHarness(t)
	ws := h.create("keeper")
	okJSON(t, call(t, h.session(ws.Path), ToolDelete, map[string]any{"keepBranch": true}), &map[string]any{})
	waitFor(t, "the workspace to be gone", func() bool {
		_, err := h.mgr.Resolve(ws.Path)
		return workspace.CodeOf(err) == workspace.CodeWorkspaceNotFound
	})
	h.waitBackground()
	if logs := h.logs.String(); !strings.Contains(logs, `"msg":"workspace deleted"`) {
		t.Fatalf("the background delete did not end in success:\n%s", logs)
	}
	if out := testenv.Git(t, h.project, "branch", "--list", "keeper"); !strings.Contains(out, "keeper") {
		t.Fatal("branch deleted although keepBranch was true")
	}
}

func TestWorkspaceDeleteKeepsABranchThatExistedBeforeUnlessAskedToDeleteIt(t *testing.T) {
	for _, ask := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "deleteBranch"}[ask], func(t *testing.T) {
			h := newHarness(t)
			testenv.Git(t, h.project, "branch", "mine")
			ws, err := h.mgr.Create(context.Background(), workspace.CreateOptions{ProjectPath: h.project, Name: "mine"})
			if err != nil {
				t.Fatal(err)
			}
			okJSON(t, call(t, h.session(ws.Path), ToolDelete, map[string]any{"deleteBranch": ask}), &map[string]any{})
			waitFor(t, "the workspace to be gone", func() bool {
				_, err := h.mgr.Resolve(ws.Path)
				return workspace.CodeOf(err) == workspace.CodeWorkspaceNotFound
			})
			h.waitBackground()
			if kept := testenv.Git(t, h.project, "branch", "--list", "mine") != ""; kept == ask {
				t.Fatalf("branch kept = %v with deleteBranch %v", kept, ask)
			}
		})
	}
}

func TestWorkspaceDeleteWhileTheTrayDeletesTheSameWorkspaceIsAConflict(t *testing.T) {
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	rec := &stopRecorder{answered: func() bool { return false }, hold: make(chan struct{})}
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir(), Agents: rec})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, mgr, project)
	ws := h.create("contested")

	// The tray deletes through the manager; its delete is held in the
	// agent-stop step, so it is in progress when the agent's call comes.
	trayDone := make(chan error, 1)
	go func() { trayDone <- mgr.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}) }()
	released := false
	release := func() {
		if !released {
			released = true
			close(rec.hold)
		}
	}
	defer release()
	waitFor(t, "the tray's delete to stop the agent", func() bool { s, _ := rec.snapshot(); return len(s) == 1 })

	code, msg := errCode(t, call(t, h.session(ws.Path), ToolDelete, map[string]any{"keepBranch": true}))
	if code != workspace.CodeConflict || !strings.Contains(msg, "already being deleted") {
		t.Fatalf("workspace_delete during the tray's delete: %s %q, want a conflict saying a delete runs", code, msg)
	}
	// Nothing changed: the workspace, its files and its branch are whole,
	// and no second stop of the agent was asked for.
	if _, err := mgr.Resolve(ws.Path); err != nil {
		t.Fatalf("the workspace no longer resolves: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "README.md")); err != nil {
		t.Fatalf("the workspace lost files: %v", err)
	}
	if out := testenv.Git(t, project, "branch", "--list", "contested"); out == "" {
		t.Fatal("the branch is gone")
	}
	if stops, _ := rec.snapshot(); len(stops) != 1 {
		t.Fatalf("agent stops %v, want the tray's one", stops)
	}

	release()
	select {
	case err := <-trayDone:
		if err != nil {
			t.Fatalf("the tray's delete: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the tray's delete did not finish")
	}
	// The refused call left no delete behind to run later, and its
	// keepBranch did not reach the tray's delete.
	h.waitBackground()
	if logs := h.logs.String(); strings.Contains(logs, "background workspace delete") {
		t.Fatalf("a background delete ran:\n%s", logs)
	}
	if stops, _ := rec.snapshot(); len(stops) != 1 {
		t.Fatalf("agent stops %v, want the tray's one", stops)
	}
	if out := testenv.Git(t, project, "branch", "--list", "contested"); out != "" {
		t.Fatalf("the tray's delete kept the branch: %q", out)
	}
}

func TestShutdownWaitsForABackgroundDelete(t *testing.T) {
	h := newHarness(t)
	ws := h.create("late")
	okJSON(t, call(t, h.session(ws.Path), ToolDelete, nil), &map[string]any{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.mgr.Resolve(ws.Path); workspace.CodeOf(err) != workspace.CodeWorkspaceNotFound {
		t.Fatalf("after shutdown the workspace resolves: %v", err)
	}
	if !errors.Is(h.srv.bgCtx.Err(), context.Canceled) {
		t.Fatal("background context still live after shutdown")
	}
}
