package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
)

// TestMain isolates git from the machine: its own HOME, no system or global
// config, a fixed identity, no inherited repository variables.
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "workspace-test-home-"))
}

// realDir returns a new temp folder with symlinks resolved.
func realDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// newManager returns a manager with a temp worktree root and a log buffer.
func newManager(t testing.TB, opts Options) (*Manager, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	if opts.WorktreeRoot == "" {
		opts.WorktreeRoot = filepath.Join(realDir(t), "worktrees")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return NewManager(opts), logs
}

// setup returns a manager with one loaded project.
func setup(t testing.TB) (*Manager, Project) {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with agents.
func setupWith(t testing.TB, agents Agents) (*Manager, Project) {
	t.Helper()
	m, _ := newManager(t, Options{Agents: agents})
	p, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// create makes a workspace through the manager.
func create(t testing.TB, m *Manager, p Project, name string) Workspace {
	t.Helper()
	ws, err := m.Create(context.Background(), CreateOptions{ProjectPath: p.Path, Name: name})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return ws
}

// events records what a manager publishes.
type events struct {
	mu   sync.Mutex
	list []Event
	done chan struct{}
}

func record(t testing.TB, m *Manager) *events {
	t.Helper()
	ch, cancel := m.Subscribe()
	e := &events{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for ev := range ch {
			e.mu.Lock()
			e.list = append(e.list, ev)
			e.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-e.done
	})
	return e
}

func (e *events) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.list...)
}

// soon bounds the wait for an event the code under test has already
// published; only the recording goroutine may lag.
const soon = 5 * time.Second

// waitFor waits until an event matching match arrives, failing after
// within, and returns it.
func (e *events) waitFor(t testing.TB, within time.Duration, what string, match func(Event) bool) Event {
	t.Helper()
	var found Event
	ok := false
	defer func() {
		if !ok {
			all := e.all()
			t.Logf("got %d events, the last ones: %+v", len(all), all[max(0, len(all)-8):])
		}
	}()
	testenv.WaitFor(t, "a "+what+" event", within, func() bool {
		for _, ev := range e.all() {
			if match(ev) {
				found, ok = ev, true
				return true
			}
		}
		return false
	})
	return found
}

// sync waits until every event m published so far has been recorded, by
// publishing a marker behind them.
func (e *events) sync(t testing.TB, m *Manager) {
	t.Helper()
	marker := Event{Kind: "test-marker", Err: fmt.Sprintf("%p", e)}
	m.Publish(marker)
	e.waitFor(t, soon, "marker", func(ev Event) bool { return ev == marker })
}

// kinds lists the kinds (and steps) of the events about path, in order.
func (e *events) kinds(path string) []string {
	var out []string
	for _, ev := range e.all() {
		if ev.Workspace.Path != path {
			continue
		}
		s := string(ev.Kind)
		if ev.Step != "" {
			s += ":" + string(ev.Step)
		}
		out = append(out, s)
	}
	return out
}

// wantCode fails the test unless err has code.
func wantCode(t testing.TB, err error, code Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := CodeOf(err); got != code {
		t.Fatalf("got code %s (%v), want %s", got, err, code)
	}
}

// fakeStore records the saved project lists.
type fakeStore struct {
	mu    sync.Mutex
	saves [][]string
	err   error
}

func (s *fakeStore) SaveProjects(p []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.saves = append(s.saves, append([]string(nil), p...))
	return nil
}

func (s *fakeStore) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.saves) == 0 {
		return nil
	}
	return s.saves[len(s.saves)-1]
}

func (s *fakeStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saves)
}

// fakeAgents is an agent supervisor: fixed statuses, recorded stops, and
// an optional gate that holds StopAgent until closed.
type fakeAgents struct {
	mu       sync.Mutex
	statuses map[string]AgentStatus
	stopped  []string
	stopErr  error
	entered  chan string   // receives the path when StopAgent starts; may be nil
	gate     chan struct{} // StopAgent waits for it when non-nil
}

// set makes path's agent report st.
func (a *fakeAgents) set(path string, st AgentStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.statuses == nil {
		a.statuses = map[string]AgentStatus{}
	}
	a.statuses[path] = st
}

// failStops makes StopAgent fail with err (nil: succeed).
func (a *fakeAgents) failStops(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopErr = err
}

func (a *fakeAgents) AgentStatus(path string) AgentStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.statuses[path]; ok {
		return s
	}
	return NoAgent
}

func (a *fakeAgents) StopAgent(ctx context.Context, path string) error {
	if a.entered != nil {
		a.entered <- path
	}
	if a.gate != nil {
		select {
		case <-a.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = append(a.stopped, path)
	return a.stopErr
}
