// Package statuscache keeps the git part of every workspace's Status
// (dirty, base, ahead, behind) in memory while it runs, so that
// workspace_get_status and the tray answer without running git. Over puts
// it in front of the manager: Status answers from the cache, and asks the
// manager (git) whenever the cache cannot answer.
//
// File-system events mark a workspace's entry stale; a refresh in the
// background runs git status (or the base comparison) again:
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
// A GitStatus call on a fresh entry takes no git and no I/O. A call on a
// stale entry waits for the refresh that covers the change (starting it at
// once rather than after the debounce), so a caller never sees the state
// from before a change it made itself. Agent status is not cached.
package statuscache

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"codehydra/workspace"
)

// Manager is what the cache needs of the workspace manager;
// *workspace.Manager is one.
type Manager interface {
	// AllWorkspaces, Resolve, Subscribe and Publish are the manager's
	// workspace list and its events: the cache follows the workspaces
	// added and removed, and publishes status-changed.
	AllWorkspaces() []workspace.Workspace
	Resolve(path string) (workspace.Workspace, error)
	Subscribe() (events <-chan workspace.Event, cancel func())
	Publish(e workspace.Event)

	// The git reads of a refresh.
	GitDirs(ws workspace.Workspace) (gitDir, commonDir string, err error)
	GitDirty(ctx context.Context, path string) (bool, error)
	GitAheadBehind(ctx context.Context, ws workspace.Workspace, branch string) (base string, ahead, behind int)
	IgnoredPaths(ctx context.Context, dir string, paths []string) (map[string]bool, error)
	TrackedPaths(ctx context.Context, dir string, dirs map[string]bool) (map[string]bool, error)
}

// Options configure a Cache.
type Options struct {
	// Logger receives the cache's logs; nil discards them.
	Logger *slog.Logger
	// Clock is the cache's time; nil is the real clock.
	Clock Clock
}

// Defaults of config.
const (
	defaultDebounce  = 75 * time.Millisecond
	defaultPoll      = 2 * time.Second
	defaultReconcile = 5 * time.Second
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

// config tunes the cache; the zero value means the defaults. Tests set
// Cache.cfg before Run.
type config struct {
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

func (cfg config) withDefaults() config {
	if cfg.debounce <= 0 {
		cfg.debounce = defaultDebounce
	}
	if cfg.poll <= 0 {
		cfg.poll = defaultPoll
	}
	if cfg.reconcile <= 0 {
		cfg.reconcile = defaultReconcile
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

// Cache is the status cache described above. It answers while Run runs;
// otherwise GitStatus answers ErrNotCached.
type Cache struct {
	m     Manager
	log   *slog.Logger
	clock Clock
	cfg   config
	// cur is the cache of the Run in progress, nil when none is.
	cur atomic.Pointer[cache]
}

// New returns a cache over m's workspaces; it caches nothing until Run.
func New(m Manager, o Options) *Cache {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	clock := o.Clock
	if clock == nil {
		clock = realClock{}
	}
	return &Cache{m: m, log: log, clock: clock}
}

// GitStatus returns the git part of ws's Status (Agent left empty). A call
// made right after a change waits for the refresh that change started, so
// it never reports the state from before it. ErrNotCached means it cannot
// answer.
func (c *Cache) GitStatus(ctx context.Context, ws workspace.Workspace) (workspace.Status, error) {
	r := c.cur.Load()
	if r == nil {
		return workspace.Status{}, ErrNotCached
	}
	return r.get(ctx, ws)
}

// Running reports whether the cache answers, which it does while Run runs
// (from Run's first instant).
func (c *Cache) Running() bool { return c.cur.Load() != nil }

// Run keeps the cache current until ctx is done, then drops every entry
// and watch and returns once its goroutines have ended. A second Run at
// the same time returns at once.
func (c *Cache) Run(ctx context.Context) {
	stop, ok := c.start(ctx)
	if !ok {
		return
	}
	defer stop()
	<-ctx.Done()
}

// Start is Run in the background: the cache answers as soon as Start
// returns (unless another Run runs it); wait returns once it has stopped,
// after ctx ends.
func (c *Cache) Start(ctx context.Context) (wait func()) {
	stop, ok := c.start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ok {
			defer stop()
			<-ctx.Done()
		}
	}()
	return func() { <-done }
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

// cache is the state of one Run.
type cache struct {
	m     Manager
	log   *slog.Logger
	clock Clock
	cfg   config
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
	entries    map[string]*cacheEntry // by workspace path, as the manager has it
	dirs       map[string]*watchedDir // by folder path
	limitShown bool                   // the watch-limit warning was logged
}

// cacheEntry is the cached status of one workspace. The fields from gone
// on are guarded by cache.mu; the ones above never change.
type cacheEntry struct {
	ws        workspace.Workspace
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
	value              workspace.Status
	// err is the failure of the refresh numbered errRun.
	err    error
	errRun uint64
	// runs counts the refreshes started; running is true while one is in
	// flight, covering generations snapTree and snapRefs; due asks for
	// another once it ends.
	runs               uint64
	running, due       bool
	snapTree, snapRefs uint64
	timer              Timer
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

// watchLimitHint tells a user how to lift the limit of inotify watches.
const watchLimitHint = "raise the limit of watched folders, e.g. sudo sysctl fs.inotify.max_user_watches=524288"

// start makes the cache of one Run answer and returns the function that
// stops it and waits for its goroutines; ok=false when another Run's
// cache answers already.
func (c *Cache) start(ctx context.Context) (stop func(), ok bool) {
	cfg := c.cfg.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	r := &cache{
		m:       c.m,
		log:     c.log,
		clock:   c.clock,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		sem:     make(chan struct{}, cfg.parallel),
		entries: map[string]*cacheEntry{},
		dirs:    map[string]*watchedDir{},
	}
	w, err := cfg.newWatcher()
	if err != nil {
		c.log.Warn("cannot watch workspaces for changes; their status is refreshed periodically instead",
			"every", cfg.poll, "err", err, "hint", watchLimitHint)
	} else {
		r.watcher = w
	}
	if !c.cur.CompareAndSwap(nil, r) {
		cancel()
		if w != nil {
			w.Close()
		}
		return nil, false
	}
	events, unsubscribe := c.m.Subscribe()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		r.loop(events)
	}()
	return func() {
		c.cur.CompareAndSwap(r, nil)
		cancel()
		<-loopDone
		unsubscribe()
		r.close()
	}, true
}

// loop handles file-system events, the manager's events and the timers
// until the cache's context ends.
func (c *cache) loop(events <-chan workspace.Event) {
	var fsEvents <-chan fsnotify.Event
	var fsErrors <-chan error
	if c.watcher != nil {
		fsEvents, fsErrors = c.watcher.Events, c.watcher.Errors
	}
	poll, stopPoll := c.clock.NewTicker(c.cfg.poll / 4)
	defer stopPoll()
	reconcile, stopReconcile := c.clock.NewTicker(c.cfg.reconcile)
	defer stopReconcile()
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
		case now := <-poll:
			c.pollDue(now)
		case <-reconcile:
			c.reconcile()
		}
	}
}

// close drops every entry, closes the watcher and waits for the refreshes.
func (c *cache) close() {
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
// refresh when the entry is stale. ErrNotCached means: ask git
// directly.
func (c *cache) get(ctx context.Context, ws workspace.Workspace) (workspace.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return workspace.Status{}, ErrNotCached
	}
	e := c.entries[ws.Path]
	if e == nil {
		e = c.trackLocked(ws)
		if e == nil {
			return workspace.Status{}, ErrNotCached
		}
	}
	wantTree, wantRefs, firstRun := e.treeGen, e.refsGen, e.runs
	for {
		switch {
		case e.gone:
			return workspace.Status{}, ErrNotCached
		case e.treeDone >= wantTree && e.refsDone >= wantRefs:
			return e.value, nil
		case e.err != nil && e.errRun > firstRun:
			return workspace.Status{}, e.err
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
			return workspace.Status{}, ctx.Err()
		}
		c.mu.Lock()
	}
}
