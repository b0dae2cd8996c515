package statuscache

import (
	"time"

	"codehydra/workspace"
)

// How an entry goes stale and fresh again: invalidation arms a debounce
// timer, the timer (or a caller that cannot wait) starts a refresh, and
// the refresh's result wakes the callers waiting for it.

// invalidateLocked marks e's dirty flag (tree) and/or base comparison
// (refs) stale and arms the debounce timer.
func (c *cache) invalidateLocked(e *cacheEntry, tree, refs bool) {
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
		c.fireAfterLocked(e, min(max(c.cfg.debounce, e.lastDur), maxRefreshDelay))
	}
}

// fireAfterLocked arms e's timer to start a refresh after d.
func (c *cache) fireAfterLocked(e *cacheEntry, d time.Duration) {
	e.timer = c.clock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		e.timer = nil
		c.fireLocked(e)
	})
}

// fireLocked starts a refresh of e now, or asks the running one to run
// once more.
func (c *cache) fireLocked(e *cacheEntry) {
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
	prev               workspace.Status // the value before it, to tell a change
	hadValue           bool
}

// refreshLoop runs refreshes of e while they are due.
func (c *cache) refreshLoop(e *cacheEntry) {
	defer c.wg.Done()
	for {
		w, ok := c.takeWork(e)
		if !ok {
			return
		}
		select {
		case c.sem <- struct{}{}:
		case <-e.ctx.Done():
			c.finish(e, w, refreshResult{err: e.ctx.Err()})
			continue
		}
		start := c.clock.Now()
		res := c.refresh(e, w)
		<-c.sem
		res.took = c.clock.Now().Sub(start)
		c.finish(e, w, res)
	}
}

// takeWork takes what the next refresh of e must do, ok=false (and e no
// longer running) when none is due.
func (c *cache) takeWork(e *cacheEntry) (w refreshWork, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.due || e.gone || c.closed {
		e.running = false
		return refreshWork{}, false
	}
	e.due = false
	e.runs++
	w = refreshWork{
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
	return w, true
}

// refreshResult is what one refresh found about base/ahead/behind, and
// how it went (the dirty flag is stored as soon as git status answers).
type refreshResult struct {
	st workspace.Status
	// branch is the branch checked out (with st's base/ahead/behind).
	branch string
	err    error
	took   time.Duration
}

// refresh does the work of one refresh of e: watches first (so that a
// change after them is never missed), then git. The dirty flag is stored
// (and its waiters woken) as soon as git status answers, without waiting
// for the slower base comparison.
func (c *cache) refresh(e *cacheEntry, w refreshWork) (r refreshResult) {
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
			refs.st.Base, refs.st.Ahead, refs.st.Behind = c.m.GitAheadBehind(ctx, e.ws, refs.branch)
		}()
	}
	if w.tree {
		if w.setup || w.mustRun || !c.allIgnored(e, w.changed) {
			if c.cfg.onGitStatus != nil {
				c.cfg.onGitStatus(e.ws.Path)
			}
			dirty, err := c.m.GitDirty(ctx, e.ws.Path)
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
func (c *cache) storeTree(e *cacheEntry, snap uint64, dirty, ran bool) {
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
func (c *cache) finish(e *cacheEntry, w refreshWork, r refreshResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gone {
		return
	}
	e.lastDur = r.took
	if e.polling {
		e.nextPoll = c.clock.Now().Add(max(c.cfg.poll, 4*r.took))
	}
	if w.refs && e.refsDone < w.snapRefs && e.ctx.Err() == nil {
		e.value.Base, e.value.Ahead, e.value.Behind = r.st.Base, r.st.Ahead, r.st.Behind
		e.branch = r.branch
		e.refsDone = w.snapRefs
	}
	if r.err != nil {
		c.failedLocked(e, w, r.err)
	} else {
		e.err, e.failures = nil, 0
	}
	e.hasValue = e.hasValue || (e.treeDone > 0 && e.refsDone > 0)
	e.wakeLocked()
	if w.hadValue && !e.value.Equal(w.prev) {
		c.m.Publish(workspace.Event{Kind: workspace.EventStatusChanged, ProjectPath: e.ws.ProjectPath, Workspace: e.ws})
	}
}

// failedLocked records that refresh w of e failed with err and arms its
// retry.
func (c *cache) failedLocked(e *cacheEntry, w refreshWork, err error) {
	e.err, e.errRun = err, w.run
	e.failures++
	// What was not refreshed must be looked at again.
	e.mustRun = true
	if e.timer == nil && !e.due {
		c.fireAfterLocked(e, retryDelay(e.failures))
	}
	if e.failures == 1 && e.ctx.Err() == nil {
		c.log.Debug("cannot refresh the status of workspace; retrying", "path", e.ws.Path, "err", err)
	}
}

// retryDelay is the wait before retrying a refresh that failed n times in
// a row: 100 ms, doubling up to 30 s.
func retryDelay(n int) time.Duration {
	return min(100*time.Millisecond<<min(n-1, 9), 30*time.Second)
}
