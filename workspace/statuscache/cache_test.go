package statuscache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"codehydra/internal/testenv"
	"codehydra/workspace"
)

// showsWithin bounds, in these tests, the wait from a change to the cache
// showing it. It is deliberately generous: the clock starts before the
// test's own git commands, and the tests run in parallel under -race on
// shared machines. The goal itself (a change shows within 1 s) is measured
// by the benchmark, build/bench ("isDirty right after a change"), which
// times the change alone. A change the cache misses never shows (nothing
// refreshes a watched workspace without an event), so the bound still
// fails such a test. Under wine, where each git command takes a second or
// more, it is testenv.Patient's longer (make test-windows runs the watcher's
// test there: the Windows file watcher).
var showsWithin = testenv.Patient(5 * time.Second)

// waitCached polls the cache, without asking for a refresh, until the
// workspace's cached status is fresh and satisfies ok. It fails after
// within, counted from since. dirtyOnly asks only the dirty flag to be
// fresh (the bound is on isDirty; ahead/behind take more git).
func waitCached(t *testing.T, m *fixture, path string, since time.Time, within time.Duration, what string, ok func(workspace.Status) bool) time.Duration {
	t.Helper()
	return waitCachedFresh(t, m, path, since, within, what, false, ok)
}

func waitCachedDirty(t *testing.T, m *fixture, path string, since time.Time, within time.Duration, what string, ok func(workspace.Status) bool) time.Duration {
	t.Helper()
	return waitCachedFresh(t, m, path, since, within, what, true, ok)
}

// peek returns the cached value of the workspace at path and whether its
// dirty flag (tree) and base comparison (refs) are fresh, without starting
// anything.
func (c *cache) peek(path string) (st workspace.Status, treeFresh, refsFresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[path]
	if e == nil || !e.hasValue {
		return workspace.Status{}, false, false, false
	}
	return e.value, e.treeDone >= e.treeGen, e.refsDone >= e.refsGen, true
}

func waitCachedFresh(t *testing.T, m *fixture, path string, since time.Time, within time.Duration, what string, dirtyOnly bool, ok func(workspace.Status) bool) time.Duration {
	t.Helper()
	c := cacheOf(t, m)
	var st workspace.Status
	var treeFresh, refsFresh, shown bool
	defer func() {
		if !shown {
			t.Logf("the cached status: %+v (fresh: dirty flag %v, base comparison %v)", st, treeFresh, refsFresh)
		}
	}()
	testenv.WaitFor(t, fmt.Sprintf("the cached status to show %s within %s of the change", what, within), within-time.Since(since), func() bool {
		var found bool
		st, treeFresh, refsFresh, found = c.peek(path)
		shown = found && treeFresh && (dirtyOnly || refsFresh) && ok(st)
		return shown
	})
	return time.Since(since)
}

// waitStatus polls Status until it satisfies ok, failing after within,
// counted from since.
func waitStatus(t *testing.T, m *fixture, path string, since time.Time, within time.Duration, what string, ok func(workspace.Status) bool) {
	t.Helper()
	var st workspace.Status
	shown := false
	defer func() {
		if !shown {
			t.Logf("Status: %+v", st)
		}
	}()
	testenv.WaitFor(t, fmt.Sprintf("Status to show %s within %s of the change", what, within), within-time.Since(since), func() bool {
		var err error
		if st, err = m.Status(context.Background(), path); err != nil {
			t.Fatal(err)
		}
		shown = ok(st)
		return shown
	})
}

func isDirty(st workspace.Status) bool { return st.IsDirty }
func isClean(st workspace.Status) bool { return !st.IsDirty }

func TestCachedStatusFollowsEveryKindOfChange(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	runCached(t, m)
	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	aheadBehind := func(ahead, behind int) func(workspace.Status) bool {
		return func(st workspace.Status) bool { return st.Ahead == ahead && st.Behind == behind }
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
		dirty  bool
		// refs, if set, must hold too; ahead/behind take a few git
		// commands more, so they are held to a looser bound.
		refs func(workspace.Status) bool
	}{
		{"untracked file", func(t *testing.T) { testenv.WriteFile(t, filepath.Join(ws.Path, "new.txt"), "x") }, true, nil},
		{"untracked file removed", func(t *testing.T) { os.Remove(filepath.Join(ws.Path, "new.txt")) }, false, nil},
		{"file in a new folder", func(t *testing.T) { testenv.WriteFile(t, filepath.Join(ws.Path, "a", "b", "c.txt"), "x") }, true, nil},
		{"new folder removed", func(t *testing.T) { os.RemoveAll(filepath.Join(ws.Path, "a")) }, false, nil},
		{"tracked file changed", func(t *testing.T) { testenv.WriteFile(t, filepath.Join(ws.Path, "README.md"), "changed\n") }, true, nil},
		{"change committed", func(t *testing.T) {
			testenv.Git(t, ws.Path, "commit", "-q", "-am", "change")
		}, false, aheadBehind(1, 0)},
		{"file in a folder made after the start, committed", func(t *testing.T) {
			testenv.WriteFile(t, filepath.Join(ws.Path, "a", "b", "d.txt"), "x")
			testenv.Git(t, ws.Path, "add", "-A")
			testenv.Git(t, ws.Path, "commit", "-q", "-m", "d")
		}, false, aheadBehind(2, 0)},
		{"file in that folder changed", func(t *testing.T) { testenv.WriteFile(t, filepath.Join(ws.Path, "a", "b", "d.txt"), "y") }, true, nil},
		{"change staged", func(t *testing.T) { testenv.Git(t, ws.Path, "add", "-A") }, true, nil},
		{"reset hard", func(t *testing.T) { testenv.Git(t, ws.Path, "reset", "-q", "--hard") }, false, nil},
		{"new file staged", func(t *testing.T) {
			testenv.WriteFile(t, filepath.Join(ws.Path, "staged.txt"), "x")
			testenv.Git(t, ws.Path, "add", "staged.txt")
		}, true, nil},
		{"staged file committed (index untouched, only the branch moves)", func(t *testing.T) {
			testenv.Git(t, ws.Path, "commit", "-q", "-m", "staged")
		}, false, aheadBehind(3, 0)},
		{"commit on the base in the main checkout", func(t *testing.T) {
			testenv.CommitFile(t, p.Path, "base.txt", "b", "base moves")
		}, false, aheadBehind(3, 1)},
		{"branch switched", func(t *testing.T) {
			testenv.Git(t, ws.Path, "checkout", "-q", "-b", "other", "main")
		}, false, aheadBehind(0, 0)},
	}
	for _, s := range steps {
		t0 := time.Now()
		s.change(t)
		what := map[bool]string{true: "dirty", false: "clean"}[s.dirty]
		want := isClean
		if s.dirty {
			want = isDirty
		}
		// The background refresh alone must get there: peek starts nothing.
		took := waitCachedDirty(t, m, ws.Path, t0, showsWithin, what, want)
		t.Logf("%s: %s after %s", s.name, what, took.Round(time.Millisecond))
		if s.refs != nil {
			took := waitCached(t, m, ws.Path, t0, soon, "the new ahead/behind", s.refs)
			t.Logf("%s: ahead/behind after %s", s.name, took.Round(time.Millisecond))
			waitStatus(t, m, ws.Path, t0, soon, what+" with the new ahead/behind", func(st workspace.Status) bool { return want(st) && s.refs(st) })
		} else {
			waitStatus(t, m, ws.Path, t0, showsWithin, what, want)
		}
	}
}

func TestStatusRightAfterAChangeWaitsForTheRefresh(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	runCached(t, m)
	ctx := context.Background()
	for i := range 5 {
		if st, err := m.Status(ctx, ws.Path); err != nil || st.IsDirty {
			t.Fatalf("round %d: status before the change = %+v, %v", i, st, err)
		}
		f := filepath.Join(ws.Path, fmt.Sprintf("f%d", i))
		testenv.WriteFile(t, f, "x")
		// The file-system event is on its way; once the cache has it, a
		// caller waits for the refresh instead of getting the old state.
		waitStatus(t, m, ws.Path, time.Now(), showsWithin, "dirty", isDirty)
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, m, ws.Path, time.Now(), showsWithin, "clean", isClean)
	}
}

func TestCommitsInAnotherWorkspaceLeaveTheCacheFresh(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	a := create(t, m, p, "a")
	b := create(t, m, p, "b")
	runCached(t, m)
	for _, ws := range []workspace.Workspace{a, b} {
		if _, err := m.Status(context.Background(), ws.Path); err != nil {
			t.Fatal(err)
		}
	}
	c := cacheOf(t, m)
	before := c.generations(a.Path)
	t0 := time.Now()
	for i := range 3 {
		testenv.CommitFile(t, b.Path, fmt.Sprintf("b%d", i), "x", "b moves on")
	}
	waitCached(t, m, b.Path, t0, showsWithin, "3 ahead", func(st workspace.Status) bool { return st.Ahead == 3 })
	if after := c.generations(a.Path); after != before {
		t.Fatalf("commits in b invalidated a: generations %v -> %v", before, after)
	}
	// The base moving does concern a.
	t1 := time.Now()
	testenv.CommitFile(t, p.Path, "main.txt", "x", "main moves on")
	waitCached(t, m, a.Path, t1, showsWithin, "1 behind", func(st workspace.Status) bool { return st.Behind == 1 })
}

// generations returns the invalidation counters of the workspace at path
// (for tests).
func (c *cache) generations(path string) [2]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[path]
	if e == nil {
		return [2]uint64{}
	}
	return [2]uint64{e.treeGen, e.refsGen}
}

func TestWarmStatusRunsNoGit(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	testenv.CommitFile(t, ws.Path, "x.txt", "x", "ahead")
	gc := countGit(m)
	runCached(t, m)
	ctx := context.Background()
	first, err := m.Status(ctx, ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	before := gc.get("all")
	for range 200 {
		st, err := m.Status(ctx, ws.Path)
		if err != nil || !st.Equal(first) {
			t.Fatalf("warm status = %+v, %v; want %+v", st, err, first)
		}
	}
	if n := gc.get("all") - before; n != 0 {
		t.Fatalf("200 warm calls ran git %d times, want 0", n)
	}
	if first.Ahead != 1 || first.Base != "main" {
		t.Fatalf("status = %+v, want 1 ahead of main", first)
	}
}

func TestConcurrentCallersShareOneRefresh(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	var statuses atomic.Int32
	m.cfg.onGitStatus = func(string) { statuses.Add(1) }
	runCached(t, m)
	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	waitCached(t, m, ws.Path, time.Now(), showsWithin, "dirty", isDirty)
	before := statuses.Load()
	testenv.WriteFile(t, filepath.Join(ws.Path, "new2.txt"), "x")
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			for range 10 {
				if _, err := m.Status(context.Background(), ws.Path); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// One write, however many callers: one refresh, perhaps a second if
	// the write's events straddled the first.
	if n := statuses.Load() - before; n > 2 {
		t.Fatalf("300 calls after one change ran git status %d times, want at most 2", n)
	}
}

func TestIgnoredPathsTriggerNoGitStatus(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.CommitFile(t, p.Path, ".gitignore", "node_modules/\n*.log\ncache/\n", "ignore")
	ws := create(t, m, p, "ws")
	// node_modules exists before the cache starts, with folders inside.
	for i := range 20 {
		testenv.WriteFile(t, filepath.Join(ws.Path, "node_modules", fmt.Sprintf("pkg%d", i), "index.js"), "x")
	}
	var statuses atomic.Int32
	var mu sync.Mutex
	var seen []string
	m.cfg.onGitStatus = func(string) { statuses.Add(1) }
	m.cfg.onEvent = func(name string) {
		mu.Lock()
		seen = append(seen, name)
		mu.Unlock()
	}
	runCached(t, m)
	if st, err := m.Status(context.Background(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	before := statuses.Load()

	// A storm inside node_modules, an ignored log file in a watched
	// folder, and an ignored folder made after the start.
	for i := range 200 {
		testenv.WriteFile(t, filepath.Join(ws.Path, "node_modules", fmt.Sprintf("pkg%d", i%20), fmt.Sprintf("f%d.js", i)), "x")
		testenv.WriteFile(t, filepath.Join(ws.Path, "node_modules", "new", fmt.Sprintf("g%d.js", i)), "x")
	}
	for range 20 {
		testenv.WriteFile(t, filepath.Join(ws.Path, "build.log"), time.Now().String())
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "cache", "a", "b.bin"), "x")
	c := cacheOf(t, m)
	learning := time.Now()
	testenv.WaitFor(t, "the cache to learn that build.log and cache/ are ignored", showsWithin, func() bool {
		return c.learnedIgnored(ws.Path, filepath.Join(ws.Path, "build.log"), filepath.Join(ws.Path, "cache"))
	})
	t.Logf("ignored paths learned after %s", time.Since(learning).Round(time.Millisecond))
	for range 20 {
		testenv.WriteFile(t, filepath.Join(ws.Path, "build.log"), time.Now().String())
	}

	// A change that counts, made last: once it shows, every earlier event
	// has been handled (inotify keeps their order).
	t0 := time.Now()
	testenv.WriteFile(t, filepath.Join(ws.Path, "real.txt"), "x")
	waitCached(t, m, ws.Path, t0, showsWithin, "dirty", isDirty)
	if n := statuses.Load() - before; n != 1 {
		t.Fatalf("git status ran %d times, want 1 (for real.txt only)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range seen {
		if strings.Contains(name, "node_modules"+string(filepath.Separator)) || strings.Contains(name, "cache"+string(filepath.Separator)) {
			t.Fatalf("an event came from inside an ignored folder: %s", name)
		}
	}
}

func TestTrackedFilesMatchingAnIgnoreRuleStillCount(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.CommitFile(t, p.Path, ".gitignore", "*.log\nbuild/\n", "ignore")
	testenv.WriteFile(t, filepath.Join(p.Path, "kept.log"), "x")
	testenv.WriteFile(t, filepath.Join(p.Path, "build", "deep", "kept.txt"), "x")
	testenv.Git(t, p.Path, "add", "-f", "kept.log", "build/deep/kept.txt")
	testenv.Git(t, p.Path, "commit", "-q", "-m", "force-add")
	ws := create(t, m, p, "ws")
	runCached(t, m)
	if st, err := m.Status(context.Background(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	for _, f := range []string{"kept.log", filepath.Join("build", "deep", "kept.txt")} {
		t0 := time.Now()
		testenv.WriteFile(t, filepath.Join(ws.Path, f), "changed")
		waitCached(t, m, ws.Path, t0, showsWithin, f+" dirty", isDirty)
		t1 := time.Now()
		testenv.Git(t, ws.Path, "checkout", "--", f)
		waitCached(t, m, ws.Path, t1, showsWithin, f+" clean again", isClean)
	}
}

// learnedIgnored reports whether the cache has learned that every path of
// paths is ignored (for tests).
func (c *cache) learnedIgnored(wsPath string, paths ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[wsPath]
	if e == nil {
		return false
	}
	for _, p := range paths {
		if _, ok := e.ignored[p]; !ok {
			return false
		}
	}
	return true
}

func TestAFolderNoLongerIgnoredIsWatched(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	testenv.CommitFile(t, p.Path, ".gitignore", "gen/\n", "ignore gen")
	ws := create(t, m, p, "ws")
	testenv.WriteFile(t, filepath.Join(ws.Path, "gen", "out.txt"), "x")
	runCached(t, m)
	if st, err := m.Status(context.Background(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	t0 := time.Now()
	testenv.WriteFile(t, filepath.Join(ws.Path, ".gitignore"), "# nothing ignored\n")
	testenv.Git(t, ws.Path, "add", "-A")
	testenv.Git(t, ws.Path, "commit", "-q", "-m", "track gen")
	waitCached(t, m, ws.Path, t0, showsWithin, "clean", isClean)
	t1 := time.Now()
	testenv.WriteFile(t, filepath.Join(ws.Path, "gen", "out.txt"), "changed")
	waitCached(t, m, ws.Path, t1, showsWithin, "dirty", isDirty)
}

func TestStatusCacheFallsBackToPollingWhenWatchesRunOut(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	logs := m.logs
	ws := create(t, m, p, "ws")
	m.cfg.poll = 100 * time.Millisecond
	m.cfg.addWatch = func(w *fsnotify.Watcher, dir string) error {
		if strings.HasPrefix(dir, ws.Path) {
			return fmt.Errorf("inotify_add_watch %s: %w", dir, syscall.ENOSPC)
		}
		return w.Add(dir)
	}
	runCached(t, m)
	if st, err := m.Status(context.Background(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if !strings.Contains(logs.String(), "max_user_watches") || !strings.Contains(logs.String(), "refreshed periodically") {
		t.Fatalf("the fallback was not logged with a hint:\n%s", logs)
	}
	c := cacheOf(t, m)
	if dirs := c.watchedUnder(ws.Path); len(dirs) != 0 {
		t.Fatalf("watches left on the worktree after the fallback: %v", dirs)
	}
	t0 := time.Now()
	testenv.WriteFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	waitStatus(t, m, ws.Path, t0, 2*time.Second, "dirty", isDirty)
}

func TestStatusCachePollsWhenNoWatcherCanBeMade(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	logs := m.logs
	ws := create(t, m, p, "ws")
	m.cfg.poll = 100 * time.Millisecond
	m.cfg.newWatcher = func() (*fsnotify.Watcher, error) {
		return nil, fmt.Errorf("inotify_init1: %w", syscall.EMFILE)
	}
	runCached(t, m)
	if st, err := m.Status(context.Background(), ws.Path); err != nil || st.IsDirty {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if !strings.Contains(logs.String(), "refreshed periodically") {
		t.Fatalf("the fallback was not logged:\n%s", logs)
	}
	t0 := time.Now()
	testenv.WriteFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	waitStatus(t, m, ws.Path, t0, 2*time.Second, "dirty", isDirty)
}

// watchedUnder lists the watched folders at or below dir (for tests).
func (c *cache) watchedUnder(dir string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for d := range c.dirs {
		if d == dir || strings.HasPrefix(d, dir+string(filepath.Separator)) {
			out = append(out, d)
		}
	}
	return out
}

func TestStatusCacheForgetsADeletedWorkspace(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	testenv.WriteFile(t, filepath.Join(ws.Path, "sub", "x.txt"), "x")
	testenv.Git(t, ws.Path, "add", "-A")
	testenv.Git(t, ws.Path, "commit", "-q", "-m", "sub")
	runCached(t, m)
	if _, err := m.Status(context.Background(), ws.Path); err != nil {
		t.Fatal(err)
	}
	c := cacheOf(t, m)
	if dirs := c.watchedUnder(ws.Path); len(dirs) < 2 {
		t.Fatalf("watched folders of the worktree = %v, want it and sub", dirs)
	}
	if err := m.Delete(context.Background(), ws.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the cache to drop the deleted workspace and its watches", soon, func() bool {
		_, _, _, cached := c.peek(ws.Path)
		return !cached && len(c.watchedUnder(ws.Path)) == 0
	})
}

func TestWorkspacesAreWarmedUpInTheBackground(t *testing.T) {
	t.Parallel()
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	runCached(t, m)
	later := create(t, m, p, "later")
	for _, path := range []string{ws.Path, later.Path} {
		waitCached(t, m, path, time.Now(), soon, "a status", func(workspace.Status) bool { return true })
	}
}

// TestStatusCacheStopsWithRun is not parallel: it counts the process's
// goroutines and inotify instances.
func TestStatusCacheStopsWithRun(t *testing.T) {
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	testenv.WriteFile(t, filepath.Join(ws.Path, "d", "x.txt"), "x")
	goroutines, inotify := runtime.NumGoroutine(), inotifyInstances(t)

	c := New(m.Manager, Options{})
	m.cache, m.cached = c, Over(m.Manager, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	cacheOf(t, m)
	waitCached(t, m, ws.Path, time.Now(), soon, "a status", func(workspace.Status) bool { return true })
	testenv.WriteFile(t, filepath.Join(ws.Path, "d", "y.txt"), "y") // a refresh may be in flight
	cancel()
	select {
	case <-done:
	case <-time.After(soon):
		t.Fatal("Run did not return")
	}
	if c.Running() {
		t.Fatal("the cache still answers after Run returned")
	}
	if st, err := m.Status(context.Background(), ws.Path); err != nil || !st.IsDirty {
		t.Fatalf("status without Run = %+v, %v; want dirty, from git", st, err)
	}
	ended := false
	defer func() {
		if !ended {
			buf := make([]byte, 1<<16)
			t.Logf("after Run: %d goroutines (before %d), %d inotify instances (before %d)\n%s",
				runtime.NumGoroutine(), goroutines, inotifyInstances(t), inotify, buf[:runtime.Stack(buf, true)])
		}
	}()
	testenv.WaitFor(t, "the cache's goroutines and inotify instance to end with Run", soon, func() bool {
		return runtime.NumGoroutine() <= goroutines && inotifyInstances(t) <= inotify
	})
	ended = true
}

// inotifyInstances counts the process's open inotify instances; 0 where
// /proc is missing.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(target, "inotify") {
			n++
		}
	}
	return n
}

func BenchmarkStatusWarm(b *testing.B) {
	m, p := setup(b)
	ws := create(b, m, p, "bench")
	for i := range 50 {
		testenv.WriteFile(b, filepath.Join(ws.Path, "files", fmt.Sprint(i)), "x")
	}
	runCached(b, m)
	ctx := context.Background()
	if _, err := m.Status(ctx, ws.Path); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := m.Status(ctx, ws.Path); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStartAnswersAtOnceAndWaitReturnsOnceTheContextEnds(t *testing.T) {
	m, p := setup(t)
	ws := create(t, m, p, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	c := New(m.Manager, Options{})
	wait := c.Start(ctx)
	if !c.Running() {
		t.Fatal("the cache does not answer when Start returns")
	}
	testenv.WriteFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	m.cache, m.cached = c, Over(m.Manager, c)
	waitCached(t, m, ws.Path, time.Now(), soon, "the new file", func(st workspace.Status) bool { return st.IsDirty })

	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait()
	}()
	select {
	case <-done:
	case <-time.After(soon):
		t.Fatal("wait did not return after the context ended")
	}
	if c.Running() {
		t.Fatal("the cache still answers after wait returned")
	}
}
