package statuscache

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// TestMain isolates git from the machine: its own HOME, no system or global
// config, a fixed identity, no inherited repository variables.
func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "statuscache-test-home-"))
}

// soon bounds a wait for what the code under test does in the background
// without a deadline of its own (a warm-up, a goroutine ending); longer
// under wine (testenv.Patient).
var soon = testenv.Patient(5 * time.Second)

// fixture is a workspace manager and the cache to run over it.
type fixture struct {
	*workspace.Manager
	// logs has what the manager and the cache log.
	logs *testenv.SyncBuffer
	// cfg tunes the cache; tests set it before runCached.
	cfg config
	// clock, when set, is the cache's clock.
	clock Clock
	// git, when set, counts the git reads of the cache and of Status.
	git *gitCounter
	// cache is the cache runCached runs, and cached the manager in front
	// of it, whose Status the tests call.
	cache  *Cache
	cached Workspaces
}

// Status is the manager's, through the cache once one runs.
func (m *fixture) Status(ctx context.Context, path string) (workspace.Status, error) {
	if m.cached.Manager == nil {
		return m.Manager.Status(ctx, path)
	}
	return m.cached.Status(ctx, path)
}

// setup returns a manager with one loaded project.
func setup(t testing.TB) (*fixture, workspace.Project) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &fixture{
		Manager: workspace.NewManager(workspace.Options{
			WorktreeRoot: filepath.Join(root, "worktrees"),
			Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		}),
		logs: logs,
	}
	p, err := m.AddProject(context.Background(), testenv.GitRepo(t, "project"))
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// create makes a workspace through the manager.
func create(t testing.TB, m *fixture, p workspace.Project, name string) workspace.Workspace {
	t.Helper()
	ws, err := m.Create(context.Background(), workspace.CreateOptions{ProjectPath: p.Path, Name: name})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return ws
}

// runCached runs a cache over m (tuned by m.cfg) and m.Run until the test
// ends, and returns the running cache once Status answers from it.
func runCached(t testing.TB, m *fixture) *cache {
	t.Helper()
	var src Manager = m.Manager
	if m.git != nil {
		src = countedManager{m.Manager, m.git}
	}
	c := New(src, Options{
		Logger: slog.New(slog.NewTextHandler(m.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:  m.clock,
	})
	c.cfg = m.cfg
	m.cache = c
	m.cached = Over(m.Manager, c)
	if m.git != nil {
		m.cached.cache = countedCache{c, m.git}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return cacheOf(t, m)
}

// cacheOf returns the state of m's running cache.
func cacheOf(t testing.TB, m *fixture) *cache {
	t.Helper()
	testenv.WaitFor(t, "the status cache to answer", soon, m.cache.Running)
	return m.cache.cur.Load()
}

// gitCounter counts the git reads a manager makes for its status, by kind.
type gitCounter struct {
	mu    sync.Mutex
	count map[string]int
}

func countGit(m *fixture) *gitCounter {
	m.git = &gitCounter{count: map[string]int{}}
	return m.git
}

func (gc *gitCounter) add(kind string) {
	gc.mu.Lock()
	gc.count[kind]++
	gc.count["all"]++
	gc.mu.Unlock()
}

func (gc *gitCounter) get(kind string) int {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.count[kind]
}

// countedManager counts the cache's git reads.
type countedManager struct {
	*workspace.Manager
	gc *gitCounter
}

func (m countedManager) GitDirty(ctx context.Context, path string) (bool, error) {
	m.gc.add("status")
	return m.Manager.GitDirty(ctx, path)
}

func (m countedManager) GitAheadBehind(ctx context.Context, ws workspace.Workspace, branch string) (string, int, int) {
	m.gc.add("ahead-behind")
	return m.Manager.GitAheadBehind(ctx, ws, branch)
}

func (m countedManager) IgnoredPaths(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	m.gc.add("check-ignore")
	return m.Manager.IgnoredPaths(ctx, dir, paths)
}

func (m countedManager) TrackedPaths(ctx context.Context, dir string, dirs map[string]bool) (map[string]bool, error) {
	m.gc.add("ls-files")
	return m.Manager.TrackedPaths(ctx, dir, dirs)
}

// countedCache counts the Status calls the cache sends to git (the
// manager's fallback).
type countedCache struct {
	*Cache
	gc *gitCounter
}

func (c countedCache) GitStatus(ctx context.Context, ws workspace.Workspace) (workspace.Status, error) {
	st, err := c.Cache.GitStatus(ctx, ws)
	if errors.Is(err, ErrNotCached) {
		c.gc.add("fallback")
	}
	return st, err
}
