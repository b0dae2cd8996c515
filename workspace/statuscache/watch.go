package statuscache

// The status cache's file watching: which folders are watched and why,
// what an event makes stale, and the ignore rules that keep ignored
// folders (node_modules/, build output) out of it.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// onFSEvent routes a file-system event to the entries watching its folder.
func (c *cache) onFSEvent(ev fsnotify.Event) {
	if c.cfg.onEvent != nil {
		c.cfg.onEvent(ev.Name)
	}
	name := ev.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if wd := c.dirs[filepath.Dir(name)]; wd != nil {
		for e, role := range wd.owners {
			c.onChildLocked(e, role, ev)
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if wd := c.dirs[name]; wd != nil {
			// A watched folder went away or moved: inotify dropped or
			// will misname its watch, and a moved folder's subfolders
			// too. The folder's new name, if any, arrives as a create.
			for e, role := range wd.owners {
				c.forgetTreeLocked(e, name, ev.Has(fsnotify.Rename))
				if role&roleTree != 0 {
					e.mustRun = true
					c.invalidateLocked(e, true, false)
				} else {
					c.invalidateLocked(e, false, true)
				}
			}
		}
	}
}

// onChildLocked applies an event on a child of a folder that e watches in
// role.
func (c *cache) onChildLocked(e *cacheEntry, role watchRole, ev fsnotify.Event) {
	base := filepath.Base(ev.Name)
	if role&roleAdmin != 0 {
		switch base {
		case "HEAD":
			e.mustRun = true
			c.invalidateLocked(e, true, true)
		case "index":
			// What is tracked may have changed, so learned ignores too.
			clear(e.ignored)
			e.mustRun = true
			c.invalidateLocked(e, true, false)
		}
	}
	if role&roleCommon != 0 {
		switch base {
		case "packed-refs":
			// May move the branch checked out, like a loose ref.
			e.mustRun = true
			c.invalidateLocked(e, true, true)
		case "config", "HEAD":
			c.invalidateLocked(e, false, true)
		}
	}
	if role&roleInfo != 0 && base == "exclude" {
		c.ignoreRulesChangedLocked(e)
	}
	if role&roleRefs != 0 {
		newDir := false
		if ev.Has(fsnotify.Create) {
			if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
				// A branch name with a slash makes a folder; a ref
				// written into it before the watch is missed, hence
				// the refresh.
				c.watchRefsLocked(e, ev.Name)
				newDir = true
			}
		}
		tree, refs := refConcerns(e, ev.Name)
		if tree {
			e.mustRun = true
		}
		if newDir || tree || refs {
			c.invalidateLocked(e, tree, true)
		}
	}
	if role&roleTree != 0 {
		c.onTreeChangeLocked(e, ev)
	}
}

// refConcerns says what a change of the loose ref file at path makes
// stale for e. Its own branch is its HEAD commit, which the dirty flag
// depends on too (staged changes are the index against HEAD; a plain
// `git commit` moves the branch without rewriting the index); its base
// moves only ahead/behind; other workspaces' branches (the refs folders
// are shared) concern it not at all.
func refConcerns(e *cacheEntry, path string) (tree, refs bool) {
	rel, ok := strings.CutPrefix(path, e.commonDir+string(filepath.Separator))
	if !ok || !e.hasValue {
		return true, true
	}
	ref := strings.TrimSuffix(filepath.ToSlash(rel), ".lock")
	switch {
	case e.branch == "" || ref == "refs/heads/"+e.branch:
		return true, true
	case e.value.Base == "" || ref == "refs/heads/"+e.value.Base || ref == "refs/remotes/"+e.value.Base:
		return false, true
	}
	return false, false
}

// onTreeChangeLocked applies an event on a path inside e's worktree.
func (c *cache) onTreeChangeLocked(e *cacheEntry, ev fsnotify.Event) {
	if base := filepath.Base(ev.Name); base == ".git" {
		return // the worktree's link to its admin folder, or a nested repository
	} else if base == ".gitignore" {
		c.ignoreRulesChangedLocked(e)
		return
	}
	if _, ok := e.ignored[ev.Name]; ok {
		return
	}
	if ev.Has(fsnotify.Create) && len(e.created) < maxChangedPaths {
		e.created = append(e.created, ev.Name)
	} else if ev.Has(fsnotify.Create) {
		e.setup = true // too many to look at one by one: walk again
	}
	if len(e.changed) < maxChangedPaths {
		e.changed[ev.Name] = struct{}{}
	} else {
		e.mustRun = true
	}
	c.invalidateLocked(e, true, false)
}

// ignoreRulesChangedLocked handles a change of .gitignore or info/exclude:
// what was learned as ignored may not be any more, and a folder that was
// skipped may now need a watch.
func (c *cache) ignoreRulesChangedLocked(e *cacheEntry) {
	clear(e.ignored)
	e.setup = true
	e.mustRun = true
	c.invalidateLocked(e, true, false)
}

// onFSError handles the watcher's errors. An overflow of the kernel's
// event queue lost events, so everything is stale.
func (c *cache) onFSError(err error) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		c.log.Debug("file-system watcher error", "err", err)
		return
	}
	c.log.Info("file-system events were lost; refreshing every workspace's status")
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		e.mustRun = true
		c.invalidateLocked(e, true, true)
	}
}

// setupWatches watches e's git folders and its worktree. When the kernel
// refuses more watches, e falls back to polling.
func (c *cache) setupWatches(e *cacheEntry) {
	c.mu.Lock()
	polling := e.polling
	c.mu.Unlock()
	if polling {
		return
	}
	err := c.watchGitDirs(e)
	if err == nil {
		err = c.watchTree(e, e.ws.Path)
	}
	if err != nil {
		c.fallBackToPolling(e, err)
	}
}

// watchGitDirs watches what changes status without touching the
// worktree's files: its admin folder (HEAD, index), the common folder
// (packed-refs, config), info/exclude and the branch refs.
func (c *cache) watchGitDirs(e *cacheEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range []struct {
		dir  string
		role watchRole
	}{
		{e.gitDir, roleAdmin},
		{e.commonDir, roleCommon},
		{filepath.Join(e.commonDir, "info"), roleInfo},
	} {
		if err := c.watchLocked(e, w.dir, w.role); err != nil && isWatchLimit(err) {
			return err
		}
	}
	for _, refs := range []string{"refs/heads", "refs/remotes"} {
		if err := c.watchRefsLocked(e, filepath.Join(e.commonDir, filepath.FromSlash(refs))); err != nil {
			return err
		}
	}
	return nil
}

// watchRefsLocked watches the refs folder dir and every folder below it.
func (c *cache) watchRefsLocked(e *cacheEntry, dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if err := c.watchLocked(e, path, roleRefs); err != nil && isWatchLimit(err) {
			return err
		}
		return nil
	})
}

// watchTree watches root and the folders below it that git does not
// ignore. It goes level by level, asking git which folders of a level are
// ignored before entering any, so an ignored folder costs one line of
// check-ignore and no watch, whatever its size. Nested repositories
// (folders with their own .git) are left out, as git status leaves them.
func (c *cache) watchTree(e *cacheEntry, root string) error {
	level := []string{root}
	for len(level) > 0 {
		if err := e.ctx.Err(); err != nil {
			return nil
		}
		var next []string
		for _, dir := range level {
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue // gone or unreadable; git status reports what matters
			}
			if dir != e.ws.Path && hasGitEntry(entries) {
				continue
			}
			c.mu.Lock()
			err = c.watchLocked(e, dir, roleTree)
			c.mu.Unlock()
			if err != nil {
				if isWatchLimit(err) {
					return err
				}
				continue
			}
			for _, de := range entries {
				if de.IsDir() && de.Name() != ".git" {
					next = append(next, filepath.Join(dir, de.Name()))
				}
			}
		}
		level = c.dropIgnored(e, next)
	}
	return nil
}

// watchCreated watches the new folders among paths (and what is below
// them), unless git ignores them.
func (c *cache) watchCreated(e *cacheEntry, paths []string) {
	var dirs []string
	c.mu.Lock()
	for _, p := range paths {
		if _, watched := e.dirs[p]; watched {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	polling := e.polling
	c.mu.Unlock()
	if polling || len(dirs) == 0 {
		return
	}
	for _, d := range c.dropIgnored(e, dirs) {
		if err := c.watchTree(e, d); err != nil {
			c.fallBackToPolling(e, err)
			return
		}
	}
}

// fallBackToPolling drops e's worktree watches after err (the kernel's
// limit, as a rule) and refreshes it periodically instead.
func (c *cache) fallBackToPolling(e *cacheEntry, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.gone || e.polling {
		return
	}
	e.polling = true
	for dir := range e.dirs {
		c.unwatchLocked(e, dir, true)
	}
	clear(e.dirs)
	e.nextPoll = c.clock.Now().Add(c.cfg.poll)
	if !c.limitShown {
		c.limitShown = true
		c.log.Warn("too many folders to watch for changes; workspace status is refreshed periodically instead of on each change",
			"path", e.ws.Path, "every", c.cfg.poll, "limit", watchLimit(), "err", err, "hint", watchLimitHint)
	} else {
		c.log.Info("workspace status is refreshed periodically (watch limit reached)", "path", e.ws.Path, "every", c.cfg.poll)
	}
}

// watchLocked adds a watch on dir for e in role (once per folder, shared
// by the entries that need it).
func (c *cache) watchLocked(e *cacheEntry, dir string, role watchRole) error {
	if e.gone || c.closed {
		return nil
	}
	wd := c.dirs[dir]
	if wd == nil {
		if c.watcher == nil {
			return errors.New("no file-system watcher")
		}
		if err := c.cfg.addWatch(c.watcher, dir); err != nil {
			return err
		}
		wd = &watchedDir{owners: map[*cacheEntry]watchRole{}}
		c.dirs[dir] = wd
	}
	wd.owners[e] |= role
	e.dirs[dir] = struct{}{}
	return nil
}

// unwatchLocked drops e's interest in dir, and the watch when no entry
// needs it any more (remove=false when the watcher closes anyway or the
// kernel already dropped it).
func (c *cache) unwatchLocked(e *cacheEntry, dir string, remove bool) {
	wd := c.dirs[dir]
	if wd == nil {
		return
	}
	delete(wd.owners, e)
	if len(wd.owners) > 0 {
		return
	}
	delete(c.dirs, dir)
	if remove && c.watcher != nil {
		_ = c.watcher.Remove(dir)
	}
}

// forgetTreeLocked forgets the watched folder dir of e, which was removed
// or moved, and after a move also the folders below it: their watches
// follow the moved folder under names that are no longer true.
func (c *cache) forgetTreeLocked(e *cacheEntry, dir string, moved bool) {
	if e.dirs == nil {
		return
	}
	delete(e.dirs, dir)
	c.unwatchLocked(e, dir, moved)
	if !moved {
		return
	}
	prefix := dir + string(filepath.Separator)
	for d := range e.dirs {
		if strings.HasPrefix(d, prefix) {
			delete(e.dirs, d)
			c.unwatchLocked(e, d, true)
		}
	}
}

// dropIgnored returns the folders of dirs that git does not ignore. A
// folder that matches an ignore rule but holds tracked files is kept:
// changes to those files still count. When git cannot tell, all are kept.
func (c *cache) dropIgnored(e *cacheEntry, dirs []string) []string {
	if len(dirs) == 0 {
		return nil
	}
	ignored, err := c.m.IgnoredPaths(e.ctx, e.ws.Path, dirs)
	if err != nil {
		if e.ctx.Err() == nil {
			c.log.Debug("cannot ask git which folders it ignores; watching them all", "path", e.ws.Path, "err", err)
		}
		return dirs
	}
	if len(ignored) == 0 {
		return dirs
	}
	withTracked, err := c.m.TrackedPaths(e.ctx, e.ws.Path, ignored)
	if err != nil {
		return dirs
	}
	kept := dirs[:0]
	for _, d := range dirs {
		if !ignored[d] || withTracked[d] {
			kept = append(kept, d)
		}
	}
	return kept
}

// allIgnored reports whether git ignores every path of changed (and
// remembers those it ignores, so that their next events are dropped
// without asking). An empty list is not "all ignored".
func (c *cache) allIgnored(e *cacheEntry, changed []string) bool {
	if len(changed) == 0 {
		return false
	}
	for _, p := range changed {
		if p == e.ws.Path {
			return false
		}
	}
	ignored, err := c.m.IgnoredPaths(e.ctx, e.ws.Path, changed)
	if err != nil {
		return false
	}
	if len(ignored) > 0 {
		// A tracked file counts even where an ignore rule matches it.
		tracked, err := c.m.TrackedPaths(e.ctx, e.ws.Path, ignored)
		if err != nil {
			return false
		}
		for p := range tracked {
			delete(ignored, p)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(e.ignored)+len(ignored) > maxIgnoredPaths {
		clear(e.ignored)
	}
	for p := range ignored {
		e.ignored[p] = struct{}{}
	}
	return len(ignored) == len(changed)
}

// readHeadBranch reads the branch checked out in the worktree whose admin
// folder is gitDir: "" and true on a detached HEAD, false when HEAD cannot
// be read.
func readHeadBranch(gitDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref:")
	if !ok {
		return "", true
	}
	branch, ok := strings.CutPrefix(strings.TrimSpace(ref), "refs/heads/")
	if !ok {
		return "", true
	}
	return branch, true
}

// hasGitEntry reports whether a folder's entries include .git, which makes
// it a nested repository or worktree.
func hasGitEntry(entries []os.DirEntry) bool {
	for _, de := range entries {
		if de.Name() == ".git" {
			return true
		}
	}
	return false
}

// isWatchLimit reports an error of adding a watch that more watches would
// hit too: the kernel's limit of watches or of open files.
func isWatchLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// watchLimit is the kernel's limit of inotify watches per user, "" where
// there is none to read.
func watchLimit() string {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
