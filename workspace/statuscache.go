package workspace

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The status cache keeps the git part of every workspace's Status (dirty,
// base, ahead, behind) while Run runs, so that workspace_get_status and the
// tray answer without running git. File-system events mark a workspace's
// entry stale; a refresh in the background runs git status (or the base
// comparison) again:
//
//   - Every folder of the worktree is watched (inotify watches are per
//     folder), except what git ignores: folders that `git check-ignore`
//     reports (node_modules/, build output) are never entered, so nothing
//     inside them causes an event. Ignored files in watched folders (*.log)
//     are learned from check-ignore on their first event and dropped
//     afterwards, without a git status.
//   - The worktree's admin folder (.git/worktrees/<name>) is watched for
//     HEAD and index, which a commit or checkout changes without touching
//     the files; the common git folder for packed-refs and config, and
//     refs/heads and refs/remotes for the refs that ahead/behind compare.
//   - Events are debounced: the first stale mark arms a timer (75 ms, or
//     as long as the last refresh took, at most 250 ms), and what arrives
//     before it fires joins the same refresh. At most one refresh per
//     workspace is in flight; one invalidated meanwhile runs once more.
//   - When the kernel refuses more watches (ENOSPC: fs.inotify.max_user_watches),
//     the workspace falls back to a periodic refresh, with a log that says
//     how to raise the limit.
//
// A Status call on a fresh entry takes no git and no I/O. A call on a stale
// entry waits for the refresh that covers the change (starting it at once
// rather than after the debounce), so a caller never sees the state from
// before a change it made itself. Agent status is not cached.

// Defaults of statusCacheConfig.
const (
	defaultStatusDebounce  = 75 * time.Millisecond
	defaultStatusPoll      = 2 * time.Second
	defaultStatusReconcile = 5 * time.Second
)

// maxRefreshDelay caps the wait between a change and its refresh (the
// debounce grows with the duration of the last refresh).
const maxRefreshDelay = 250 * time.Millisecond

// Bounds of what an entry remembers between refreshes.
const (
	// maxChangedPaths is how many changed paths are kept for the ignore
	// check; beyond it the next refresh runs git status unconditionally.
	maxChangedPaths = 256
	// maxIgnoredPaths bounds the learned ignored paths of one workspace.
	maxIgnoredPaths = 4096
)

// errNotCached tells Status that the cache cannot answer (it is closing or
// the workspace just left it), so it should ask git itself.
var errNotCached = errors.New("status not cached")

// statusCacheConfig tunes the cache; the zero value means the defaults.
// Tests set Manager.statusCfg before Run.
type statusCacheConfig struct {
	// debounce is how long a refresh waits after the first change.
	debounce time.Duration
	// poll is the interval of the periodic refresh of a workspace that
	// cannot be watched (at least 4 times its last refresh's duration).
	poll time.Duration
	// reconcile is how often the entries are matched against the
	// workspaces the manager knows.
	reconcile time.Duration
	// parallel bounds the refreshes running at once.
	parallel int
	// newWatcher makes the file-system watcher; nil is fsnotify.NewWatcher.
	newWatcher func() (*fsnotify.Watcher, error)
	// addWatch adds a watch on a folder; nil is (*fsnotify.Watcher).Add.
	addWatch func(w *fsnotify.Watcher, dir string) error
	// onGitStatus is called before each git status the cache runs.
	onGitStatus func(wsPath string)
	// onEvent is called with every file-system event the cache receives.
	onEvent func(name string)
}

func (cfg statusCacheConfig) withDefaults() statusCacheConfig {
	if cfg.debounce <= 0 {
		cfg.debounce = defaultStatusDebounce
	}
	if cfg.poll <= 0 {
		cfg.poll = defaultStatusPoll
	}
	if cfg.reconcile <= 0 {
		cfg.reconcile = defaultStatusReconcile
	}
	if cfg.parallel <= 0 {
		cfg.parallel = max(2, runtime.NumCPU())
	}
	if cfg.newWatcher == nil {
		cfg.newWatcher = fsnotify.NewWatcher
	}
	if cfg.addWatch == nil {
		cfg.addWatch = func(w *fsnotify.Watcher, dir string) error { return w.Add(dir) }
	}
	return cfg
}

// watchRole says why a folder is watched for an entry, which decides what
// an event in it invalidates.
type watchRole uint8

const (
	roleTree   watchRole = 1 << iota // a folder of the worktree
	roleAdmin                        // .git/worktrees/<name>: HEAD, index
	roleCommon                       // the common git folder: packed-refs, config, HEAD
	roleInfo                         // <common>/info: exclude
	roleRefs                         // <common>/refs/heads, refs/remotes and below
)

// watchedDir is one watched folder and the entries it serves.
type watchedDir struct {
	owners map[*cacheEntry]watchRole
}

// statusCache is the cache described above. It lives from Run's start to
// its end.
type statusCache struct {
	m   *Manager
	log *slog.Logger
	cfg statusCacheConfig
	// watcher is nil when none could be made: every entry then polls.
	watcher *fsnotify.Watcher
	ctx     context.Context
	cancel  context.CancelFunc
	// sem bounds the refreshes running at once.
	sem chan struct{}
	// wg counts the refresh goroutines.
	wg sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	entries    map[string]*cacheEntry // by pathKey(workspace path)
	dirs       map[string]*watchedDir // by folder path
	limitShown bool                   // the watch-limit warning was logged
}

// cacheEntry is the cached status of one workspace. The fields from gone
// on are guarded by statusCache.mu; the ones above never change.
type cacheEntry struct {
	ws        Workspace
	p         *project
	gitDir    string // the worktree's admin folder
	commonDir string
	ctx       context.Context // ends when the entry is dropped
	cancel    context.CancelFunc

	gone bool
	// treeGen and refsGen count invalidations of the dirty flag and of
	// base/ahead/behind; treeDone and refsDone are the generations the
	// cached values reflect. Equal means fresh.
	treeGen, refsGen   uint64
	treeDone, refsDone uint64
	hasValue           bool
	value              Status
	// err is the failure of the refresh numbered errRun.
	err    error
	errRun uint64
	// runs counts the refreshes started; running is true while one is in
	// flight, covering generations snapTree and snapRefs; due asks for
	// another once it ends.
	runs               uint64
	running, due       bool
	snapTree, snapRefs uint64
	timer              *time.Timer
	// done is closed (and replaced) whenever a refresh ends.
	done chan struct{}

	// What the next refresh must look at.
	setup    bool                // (re)walk the worktree and add watches
	mustRun  bool                // run git status whatever changed
	changed  map[string]struct{} // worktree paths changed since the last refresh
	created  []string            // paths created since (maybe folders to watch)
	ignored  map[string]struct{} // paths git ignores, learned by check-ignore
	branch   string              // the branch checked out at the last refresh
	dirs     map[string]struct{} // folders watched for this entry
	polling  bool                // cannot be watched: refreshed periodically
	nextPoll time.Time
	lastDur  time.Duration
	failures int // refreshes failed in a row
}

// startStatusCache starts the cache for Run's lifetime and returns the
// function that stops it and waits for its goroutines.
func (m *Manager) startStatusCache(ctx context.Context) (stop func()) {
	cfg := m.statusCfg.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	c := &statusCache{
		m:       m,
		log:     m.log,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		sem:     make(chan struct{}, cfg.parallel),
		entries: map[string]*cacheEntry{},
		dirs:    map[string]*watchedDir{},
	}
	w, err := cfg.newWatcher()
	if err != nil {
		m.log.Warn("cannot watch workspaces for changes; their status is refreshed periodically instead",
			"every", cfg.poll, "err", err, "hint", watchLimitHint)
	} else {
		c.watcher = w
	}
	if !m.cache.CompareAndSwap(nil, c) {
		cancel()
		if w != nil {
			w.Close()
		}
		return func() {}
	}
	events, unsubscribe := m.Subscribe()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		c.loop(events)
	}()
	return func() {
		m.cache.CompareAndSwap(c, nil)
		cancel()
		<-loopDone
		unsubscribe()
		c.close()
	}
}

// StatusCached reports whether Status answers from the cache, which it
// does while Run runs (from Run's first instant).
func (m *Manager) StatusCached() bool { return m.cache.Load() != nil }

// watchLimitHint tells a user how to lift the limit of inotify watches.
const watchLimitHint = "raise the limit of watched folders, e.g. sudo sysctl fs.inotify.max_user_watches=524288"

// loop handles file-system events, the manager's events and the timers
// until the cache's context ends.
func (c *statusCache) loop(events <-chan Event) {
	var fsEvents <-chan fsnotify.Event
	var fsErrors <-chan error
	if c.watcher != nil {
		fsEvents, fsErrors = c.watcher.Events, c.watcher.Errors
	}
	poll := time.NewTicker(c.cfg.poll / 4)
	defer poll.Stop()
	reconcile := time.NewTicker(c.cfg.reconcile)
	defer reconcile.Stop()
	c.reconcile()
	for {
		select {
		case <-c.ctx.Done():
			return
		case ev, ok := <-fsEvents:
			if !ok {
				fsEvents = nil
				continue
			}
			c.onFSEvent(ev)
		case err, ok := <-fsErrors:
			if !ok {
				fsErrors = nil
				continue
			}
			c.onFSError(err)
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			c.onManagerEvent(e)
		case now := <-poll.C:
			c.pollDue(now)
		case <-reconcile.C:
			c.reconcile()
		}
	}
}

// close drops every entry, closes the watcher and waits for the refreshes.
func (c *statusCache) close() {
	c.mu.Lock()
	c.closed = true
	for _, e := range c.entries {
		c.dropLocked(e, false)
	}
	c.mu.Unlock()
	if c.watcher != nil {
		c.watcher.Close()
	}
	c.wg.Wait()
}

// get returns the git part of ws's Status from the cache, waiting for a
// refresh when the entry is stale. errNotCached means: ask git directly.
func (c *statusCache) get(ctx context.Context, ws Workspace, p *project) (Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Status{}, errNotCached
	}
	e := c.entries[pathKey(ws.Path)]
	if e == nil {
		e = c.trackLocked(ws, p)
		if e == nil {
			return Status{}, errNotCached
		}
	}
	wantTree, wantRefs, firstRun := e.treeGen, e.refsGen, e.runs
	for {
		switch {
		case e.gone:
			return Status{}, errNotCached
		case e.treeDone >= wantTree && e.refsDone >= wantRefs:
			return e.value, nil
		case e.err != nil && e.errRun > firstRun:
			return Status{}, e.err
		case e.polling && e.hasValue:
			// A workspace that cannot be watched answers from its last
			// periodic refresh; waiting would make every call slow.
			return e.value, nil
		}
		if !e.running || e.snapTree < wantTree || e.snapRefs < wantRefs {
			c.fireLocked(e)
		}
		done := e.done
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			c.mu.Lock()
			return Status{}, ctx.Err()
		}
		c.mu.Lock()
	}
}

// peek returns the cached value of the workspace at path and whether its
// dirty flag (tree) and base comparison (refs) are fresh, without starting
// anything (for tests).
func (c *statusCache) peek(path string) (st Status, treeFresh, refsFresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[pathKey(path)]
	if e == nil || !e.hasValue {
		return Status{}, false, false, false
	}
	return e.value, e.treeDone >= e.treeGen, e.refsDone >= e.refsGen, true
}

// track starts caching the workspace at path, if the manager knows it.
func (c *statusCache) track(path string) {
	ws, p, ok := c.m.lookupWorkspace(path)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.entries[pathKey(ws.Path)] == nil {
		c.trackLocked(ws, p)
	}
}

// trackLocked adds an entry for ws and starts its first refresh, which
// sets up the watches. It returns nil when ws has no readable git folder.
func (c *statusCache) trackLocked(ws Workspace, p *project) *cacheEntry {
	gitDir, err := readGitDir(ws.Path)
	if err != nil {
		c.log.Debug("cannot find the git folder of workspace; its status is not cached", "path", ws.Path, "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	e := &cacheEntry{
		ws:        ws,
		p:         p,
		gitDir:    gitDir,
		commonDir: p.commonDir,
		ctx:       ctx,
		cancel:    cancel,
		treeGen:   1,
		refsGen:   1,
		done:      make(chan struct{}),
		setup:     true,
		mustRun:   true,
		changed:   map[string]struct{}{},
		ignored:   map[string]struct{}{},
		dirs:      map[string]struct{}{},
		polling:   c.watcher == nil,
	}
	c.entries[pathKey(ws.Path)] = e
	c.fireLocked(e)
	return e
}

// untrack stops caching the workspace at path and removes its watches.
func (c *statusCache) untrack(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[pathKey(filepath.Clean(path))]; e != nil {
		c.dropLocked(e, true)
	}
}

// dropLocked removes e: its refresh is cancelled, its waiters told to ask
// git themselves, and its watches removed (unless the whole watcher is
// about to close).
func (c *statusCache) dropLocked(e *cacheEntry, unwatch bool) {
	if e.gone {
		return
	}
	e.gone = true
	e.cancel()
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.wakeLocked()
	delete(c.entries, pathKey(e.ws.Path))
	for dir := range e.dirs {
		c.unwatchLocked(e, dir, unwatch)
	}
	e.dirs = nil
}

// reconcile matches the entries with the manager's workspaces: new ones
// are tracked (and so warmed up), vanished ones dropped. Events do this
// too; reconcile catches what a dropped event missed.
func (c *statusCache) reconcile() {
	all := c.m.AllWorkspaces()
	known := make(map[string]bool, len(all))
	for _, ws := range all {
		known[pathKey(ws.Path)] = true
	}
	c.mu.Lock()
	for k, e := range c.entries {
		if !known[k] {
			c.dropLocked(e, true)
		}
	}
	var missing []string
	for _, ws := range all {
		if c.entries[pathKey(ws.Path)] == nil {
			missing = append(missing, ws.Path)
		}
	}
	c.mu.Unlock()
	for _, path := range missing {
		c.track(path)
	}
}

// onManagerEvent follows the workspaces the manager adds and removes.
func (c *statusCache) onManagerEvent(e Event) {
	switch e.Kind {
	case EventWorkspaceAdded:
		c.track(e.Workspace.Path)
	case EventWorkspaceRemoved:
		c.untrack(e.Workspace.Path)
	case EventDeleteProgress:
		// Removing the worktree would flood the watches with events.
		if e.Step == StepRemoveWorktree {
			c.untrack(e.Workspace.Path)
		}
	case EventProjectRemoved:
		c.mu.Lock()
		for _, en := range c.entries {
			if pathKey(en.ws.ProjectPath) == pathKey(e.ProjectPath) {
				c.dropLocked(en, true)
			}
		}
		c.mu.Unlock()
	case EventMetadataChanged:
		// The base may have changed; the config watch sees it too, but
		// the event says which workspace.
		c.mu.Lock()
		if en := c.entries[pathKey(e.Workspace.Path)]; en != nil {
			c.invalidateLocked(en, false, true)
		}
		c.mu.Unlock()
	}
}

// pollDue refreshes the workspaces that cannot be watched and whose turn
// has come.
func (c *statusCache) pollDue(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if !e.polling || e.running || now.Before(e.nextPoll) {
			continue
		}
		e.mustRun = true
		e.treeGen++
		e.refsGen++
		c.fireLocked(e)
	}
}

// invalidateLocked marks e's dirty flag (tree) and/or base comparison
// (refs) stale and arms the debounce timer.
func (c *statusCache) invalidateLocked(e *cacheEntry, tree, refs bool) {
	if e.gone {
		return
	}
	if tree {
		e.treeGen++
	}
	if refs {
		e.refsGen++
	}
	if e.timer == nil && !e.due {
		// Under a steady stream of changes (a build writing files that
		// git does not ignore) refreshes would run back to back; waiting
		// as long as the last one took keeps git below half a core, and
		// the cap keeps a change visible within a second.
		delay := min(max(c.cfg.debounce, e.lastDur), maxRefreshDelay)
		e.timer = time.AfterFunc(delay, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			e.timer = nil
			c.fireLocked(e)
		})
	}
}

// fireLocked starts a refresh of e now, or asks the running one to run
// once more.
func (c *statusCache) fireLocked(e *cacheEntry) {
	if e.gone || c.closed {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.due = true
	if e.running {
		return
	}
	e.running = true
	c.wg.Add(1)
	go c.refreshLoop(e)
}

// refreshWork is what one refresh has to do, taken from the entry.
type refreshWork struct {
	run                uint64 // the refresh's number
	snapTree, snapRefs uint64 // the generations it covers
	setup, mustRun     bool
	changed            []string
	created            []string
	tree, refs         bool
	prev               Status // the value before it, to tell a change
	hadValue           bool
}

// refreshLoop runs refreshes of e while they are due.
func (c *statusCache) refreshLoop(e *cacheEntry) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if !e.due || e.gone || c.closed {
			e.running = false
			c.mu.Unlock()
			return
		}
		e.due = false
		e.runs++
		w := refreshWork{
			run:      e.runs,
			snapTree: e.treeGen,
			snapRefs: e.refsGen,
			setup:    e.setup,
			mustRun:  e.mustRun,
			created:  e.created,
			tree:     e.treeDone < e.treeGen,
			refs:     e.refsDone < e.refsGen,
			prev:     e.value,
			hadValue: e.hasValue,
		}
		e.snapTree, e.snapRefs = w.snapTree, w.snapRefs
		for p := range e.changed {
			w.changed = append(w.changed, p)
		}
		e.setup, e.mustRun, e.created = false, false, nil
		clear(e.changed)
		c.mu.Unlock()

		select {
		case c.sem <- struct{}{}:
		case <-e.ctx.Done():
			c.finish(e, w, refreshResult{err: e.ctx.Err()})
			continue
		}
		start := time.Now()
		res := c.refresh(e, w)
		<-c.sem
		res.took = time.Since(start)
		c.finish(e, w, res)
	}
}

// refreshResult is what one refresh found about base/ahead/behind, and
// how it went (the dirty flag is stored as soon as git status answers).
type refreshResult struct {
	st Status
	// branch is the branch checked out (with st's base/ahead/behind).
	branch string
	err    error
	took   time.Duration
}

// refresh does the work of one refresh of e: watches first (so that a
// change after them is never missed), then git. The dirty flag is stored
// (and its waiters woken) as soon as git status answers, without waiting
// for the slower base comparison.
func (c *statusCache) refresh(e *cacheEntry, w refreshWork) (r refreshResult) {
	ctx := e.ctx
	if w.setup {
		c.setupWatches(e)
	}
	if len(w.created) > 0 {
		c.watchCreated(e, w.created)
	}
	var refsDone chan struct{}
	var refs refreshResult
	if w.refs {
		refsDone = make(chan struct{})
		go func() {
			defer close(refsDone)
			refs.branch = e.ws.Branch
			if b, ok := readHeadBranch(e.gitDir); ok {
				refs.branch = b
			}
			refs.st.Base, refs.st.Ahead, refs.st.Behind = c.m.readAheadBehind(ctx, e.p, e.ws.Path, refs.branch)
		}()
	}
	if w.tree {
		if w.setup || w.mustRun || !c.allIgnored(e, w.changed) {
			if c.cfg.onGitStatus != nil {
				c.cfg.onGitStatus(e.ws.Path)
			}
			dirty, err := c.m.readDirty(ctx, e.ws.Path)
			if err != nil {
				r.err = err
			} else {
				c.storeTree(e, w.snapTree, dirty, true)
			}
		} else {
			// Only ignored paths changed: the dirty flag stands.
			c.storeTree(e, w.snapTree, false, false)
		}
	}
	if refsDone != nil {
		<-refsDone
		r.st, r.branch = refs.st, refs.branch
	}
	if r.err == nil {
		r.err = ctx.Err()
	}
	return r
}

// storeTree stores the dirty flag found for generation snap (ran=false:
// unchanged) and wakes the waiters.
func (c *statusCache) storeTree(e *cacheEntry, snap uint64, dirty, ran bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gone || e.treeDone >= snap {
		return
	}
	if ran {
		e.value.IsDirty = dirty
	}
	e.treeDone = snap
	e.wakeLocked()
}

// wakeLocked wakes everyone waiting for e to change.
func (e *cacheEntry) wakeLocked() {
	close(e.done)
	e.done = make(chan struct{})
}

// finish stores the rest of refresh w's result and wakes the waiters. A
// failed refresh is retried in the background, less often each time.
func (c *statusCache) finish(e *cacheEntry, w refreshWork, r refreshResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gone {
		return
	}
	e.lastDur = r.took
	if e.polling {
		e.nextPoll = time.Now().Add(max(c.cfg.poll, 4*r.took))
	}
	if w.refs && e.refsDone < w.snapRefs && e.ctx.Err() == nil {
		e.value.Base, e.value.Ahead, e.value.Behind = r.st.Base, r.st.Ahead, r.st.Behind
		e.branch = r.branch
		e.refsDone = w.snapRefs
	}
	if r.err != nil {
		e.err, e.errRun = r.err, w.run
		e.failures++
		// What was not refreshed must be looked at again.
		e.mustRun = true
		if e.timer == nil && !e.due {
			e.timer = time.AfterFunc(retryDelay(e.failures), func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				e.timer = nil
				c.fireLocked(e)
			})
		}
		if e.failures == 1 && e.ctx.Err() == nil {
			c.log.Debug("cannot refresh the status of workspace; retrying", "path", e.ws.Path, "err", r.err)
		}
	} else {
		e.err, e.failures = nil, 0
	}
	e.hasValue = e.hasValue || (e.treeDone > 0 && e.refsDone > 0)
	e.wakeLocked()
	if w.hadValue && e.value != w.prev {
		c.m.Publish(Event{Kind: EventStatusChanged, ProjectPath: e.ws.ProjectPath, Workspace: e.ws})
	}
}

// retryDelay is the wait before retrying a refresh that failed n times in
// a row: 100 ms, doubling up to 30 s.
func retryDelay(n int) time.Duration {
	return min(100*time.Millisecond<<min(n-1, 9), 30*time.Second)
}

// lookupWorkspace finds a loaded workspace and its project by path (as
// the manager has it; no symlink resolution).
func (m *Manager) lookupWorkspace(path string) (Workspace, *project, bool) {
	key := pathKey(filepath.Clean(path))
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.projects {
		if ws, ok := p.workspaces[key]; ok {
			return ws, p, true
		}
	}
	return Workspace{}, nil, false
}
