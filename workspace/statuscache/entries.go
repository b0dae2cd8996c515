package statuscache

import (
	"context"
	"path/filepath"
	"time"

	"codehydra/workspace"
)

// Which workspaces the cache holds: those the manager knows, followed by
// its events and matched with its list now and then.

// track starts caching the workspace at path, if the manager knows it.
func (c *cache) track(path string) {
	ws, err := c.m.Resolve(path)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.entries[ws.Path] == nil {
		c.trackLocked(ws)
	}
}

// trackLocked adds an entry for ws and starts its first refresh, which
// sets up the watches. It returns nil when ws has no readable git folder.
func (c *cache) trackLocked(ws workspace.Workspace) *cacheEntry {
	gitDir, commonDir, err := c.m.GitDirs(ws)
	if err != nil {
		c.log.Debug("cannot find the git folders of workspace; its status is not cached", "path", ws.Path, "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	e := &cacheEntry{
		ws:        ws,
		gitDir:    gitDir,
		commonDir: commonDir,
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
	c.entries[ws.Path] = e
	c.fireLocked(e)
	return e
}

// untrack stops caching the workspace at path and removes its watches.
func (c *cache) untrack(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[filepath.Clean(path)]; e != nil {
		c.dropLocked(e, true)
	}
}

// dropLocked removes e: its refresh is cancelled, its waiters told to ask
// git themselves, and its watches removed (unless the whole watcher is
// about to close).
func (c *cache) dropLocked(e *cacheEntry, unwatch bool) {
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
	delete(c.entries, e.ws.Path)
	for dir := range e.dirs {
		c.unwatchLocked(e, dir, unwatch)
	}
	e.dirs = nil
}

// reconcile matches the entries with the manager's workspaces: new ones
// are tracked (and so warmed up), vanished ones dropped. Events do this
// too; reconcile catches what a dropped event missed.
func (c *cache) reconcile() {
	all := c.m.AllWorkspaces()
	known := make(map[string]bool, len(all))
	for _, ws := range all {
		known[ws.Path] = true
	}
	c.mu.Lock()
	for k, e := range c.entries {
		if !known[k] {
			c.dropLocked(e, true)
		}
	}
	var missing []string
	for _, ws := range all {
		if c.entries[ws.Path] == nil {
			missing = append(missing, ws.Path)
		}
	}
	c.mu.Unlock()
	for _, path := range missing {
		c.track(path)
	}
}

// onManagerEvent follows the workspaces the manager adds and removes.
func (c *cache) onManagerEvent(e workspace.Event) {
	switch e.Kind {
	case workspace.EventWorkspaceAdded:
		c.track(e.Workspace.Path)
	case workspace.EventWorkspaceRemoved:
		c.untrack(e.Workspace.Path)
	case workspace.EventDeleteProgress:
		// Removing the worktree would flood the watches with events.
		if e.Step == workspace.StepRemoveWorktree {
			c.untrack(e.Workspace.Path)
		}
	case workspace.EventProjectRemoved:
		c.mu.Lock()
		for _, en := range c.entries {
			if en.ws.ProjectPath == e.ProjectPath {
				c.dropLocked(en, true)
			}
		}
		c.mu.Unlock()
	case workspace.EventMetadataChanged:
		// The base may have changed; the config watch sees it too, but
		// the event says which workspace.
		c.mu.Lock()
		if en := c.entries[e.Workspace.Path]; en != nil {
			c.invalidateLocked(en, false, true)
		}
		c.mu.Unlock()
	}
}

// pollDue refreshes the workspaces that cannot be watched and whose turn
// has come.
func (c *cache) pollDue(now time.Time) {
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
