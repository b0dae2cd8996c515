package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// worktreeEntry is one record of `git worktree list --porcelain -z`.
type worktreeEntry struct {
	Path       string // as git reports it, cleaned
	Head       string
	Branch     string // short name; "" when detached
	Detached   bool
	Bare       bool
	Locked     bool
	LockReason string
	Prunable   bool
}

// parseWorktreeList parses `git worktree list --porcelain -z`: records of
// "key value" fields, each ended by a NUL, a record ended by an empty
// field, the main worktree first. NUL is the one byte no path holds, so a
// folder name with a newline in it cannot pass for a record of its own.
func parseWorktreeList(out string) []worktreeEntry {
	var entries []worktreeEntry
	var cur *worktreeEntry
	for field := range strings.SplitSeq(out, "\x00") {
		key, value, _ := strings.Cut(field, " ")
		switch key {
		case "worktree":
			entries = append(entries, worktreeEntry{Path: filepath.Clean(value)})
			cur = &entries[len(entries)-1]
		case "":
			cur = nil
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = value
		case "branch":
			cur.Branch = strings.TrimPrefix(value, "refs/heads/")
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked, cur.LockReason = true, value
		case "prunable":
			cur.Prunable = true
		}
	}
	return entries
}

// listWorktrees runs `git worktree list --porcelain -z` in the project.
func (m *Manager) listWorktrees(ctx context.Context, p *project) ([]worktreeEntry, error) {
	p.worktreesMu.RLock()
	defer p.worktreesMu.RUnlock()
	out, err := m.git.run(ctx, p.Path, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	return parseWorktreeList(out), nil
}

// changeWorktrees runs a git command that changes the project's worktrees
// or branches.
func (m *Manager) changeWorktrees(ctx context.Context, p *project, args ...string) (string, error) {
	p.worktreesMu.Lock()
	defer p.worktreesMu.Unlock()
	if len(args) > 0 && args[0] == "branch" {
		// Deleting a branch also removes its section from the config.
		p.configMu.Lock()
		defer p.configMu.Unlock()
	}
	return m.git.run(ctx, p.Path, args...)
}

// discover lists the worktrees of p: the workspaces (main checkout
// excluded, folder present) and, apart, the worktrees git still has
// registered whose folder is missing (or replaced by a symlink), both
// keyed by pathKey of the registeredPath.
func (m *Manager) discover(ctx context.Context, p *project) (found, missing map[string]Workspace, err error) {
	entries, err := m.listWorktrees(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	found, missing = map[string]Workspace{}, map[string]Workspace{}
	for i, e := range entries {
		if i == 0 || e.Bare {
			continue // the main checkout is the project
		}
		ws := Workspace{
			Name:        e.Branch,
			Branch:      e.Branch,
			ProjectPath: p.Path,
			Head:        e.Head,
			Detached:    e.Detached || e.Branch == "",
		}
		ws.Path = registeredPath(e.Path)
		if pathKey(ws.Path) == pathKey(p.Path) {
			continue
		}
		if ws.Name == "" {
			ws.Name = filepath.Base(ws.Path)
		}
		// A folder replaced by a symlink (or a file) is no longer the
		// worktree: it stays under the path git registered, as missing,
		// never under the symlink's target, which the app must not act on.
		if fi, err := os.Lstat(ws.Path); err != nil || !fi.IsDir() {
			missing[pathKey(ws.Path)] = ws
			continue
		}
		// git takes a worktree's folder from a file in the worktree's own
		// folder in the repository, which its agent may write: a folder
		// counts as a workspace only when its .git and that folder lead
		// to each other, or an agent could have CodeHydra make a
		// workspace (and a sandbox that writes it) of any folder.
		if _, err := worktreeGitDir(ws.Path, p.commonDir); err != nil {
			m.log.Warn("a worktree that git lists is not taken as a workspace: its folder and git's record do not lead to each other (git worktree repair may fix it)",
				"path", ws.Path, "err", err)
			continue
		}
		found[pathKey(ws.Path)] = ws
	}
	return found, missing, nil
}

// registeredPath is the worktree folder git registered at p, with the
// symlinks of its parent folders resolved but not one put in place of the
// folder itself.
func registeredPath(p string) string {
	p = filepath.Clean(p)
	dir, base := filepath.Split(p)
	if base == "" {
		return p
	}
	return filepath.Join(resolveMaybeMissing(dir), base)
}

// findEntry returns the entry of entries whose folder is path (a
// registeredPath, which may no longer exist).
func findEntry(entries []worktreeEntry, path string) (worktreeEntry, bool) {
	key := pathKey(path)
	for _, e := range entries {
		if pathKey(registeredPath(e.Path)) == key {
			return e, true
		}
	}
	return worktreeEntry{}, false
}
