package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Run watches for worktrees added or removed outside the app until ctx is
// done, publishing workspace-added and workspace-removed (and
// status-changed when a worktree switched branch). Every PollInterval it
// reads the small files under <git-common-dir>/worktrees and runs git only
// for a project where they changed.
func (m *Manager) Run(ctx context.Context) {
	interval := m.opts.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.poll(ctx)
		}
	}
}

// poll refreshes every project whose worktrees changed.
func (m *Manager) poll(ctx context.Context) {
	for _, p := range m.projectList() {
		if ctx.Err() != nil {
			return
		}
		m.refresh(ctx, p, false)
	}
}

// worktreesSignature sums up <commonDir>/worktrees: per registered worktree
// its gitdir file, whether that folder still exists, its HEAD and lock. It
// changes whenever `git worktree add/remove/prune/lock`, a checkout in a
// worktree, or deleting a worktree folder by hand changes what discover
// would report, and costs a few small reads.
func worktreesSignature(commonDir string) string {
	dir := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "none"
	}
	var b strings.Builder
	for _, e := range entries {
		admin := filepath.Join(dir, e.Name())
		gitdir, _ := os.ReadFile(filepath.Join(admin, "gitdir"))
		_, statErr := os.Stat(strings.TrimSpace(string(gitdir)))
		head, _ := os.ReadFile(filepath.Join(admin, "HEAD"))
		_, lockErr := os.Stat(filepath.Join(admin, "locked"))
		fmt.Fprintf(&b, "%s\x00%s\x00%t\x00%s\x00%t\n", e.Name(), gitdir, statErr == nil, head, lockErr == nil)
	}
	return b.String()
}

// refresh re-reads p's worktrees when their signature changed (always when
// force) and publishes the difference. Paths that a create or delete is
// working on are left to it.
func (m *Manager) refresh(ctx context.Context, p *project, force bool) {
	sig := worktreesSignature(p.commonDir)
	m.mu.Lock()
	unchanged := p.sig == sig && !force
	gen := p.gen
	m.mu.Unlock()
	if unchanged {
		return
	}
	found, missing, err := m.discover(ctx, p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.projects[pathKey(p.Path)] != p {
		return // removed meanwhile
	}
	if err != nil {
		if ctx.Err() == nil && err.Error() != p.lastErr {
			m.log.Warn("cannot list the worktrees of project", "path", p.Path, "err", err)
			p.lastErr = err.Error()
		}
		return
	}
	p.lastErr = ""
	if p.gen != gen {
		// The app changed the project while git ran; what git said may
		// predate that change, so look again next time.
		p.sig = ""
		return
	}
	// A path a create or delete works on is left to it; what git says of
	// it is read again at the next poll, once that work has ended (a
	// worktree made outside the app at the path of one being deleted
	// would otherwise wait for an unrelated change of the signature).
	skipped := false
	for k, ws := range found {
		if _, ok := m.busy[k]; ok {
			skipped = true
			continue
		}
		old, ok := p.workspaces[k]
		p.workspaces[k] = ws
		switch {
		case !ok:
			m.log.Info("workspace appeared", "path", ws.Path, "branch", ws.Branch)
			m.ports.assign(ws.Path)
			m.Publish(Event{Kind: EventWorkspaceAdded, ProjectPath: p.Path, Workspace: ws})
		case old.Branch != ws.Branch || old.Detached != ws.Detached:
			m.Publish(Event{Kind: EventStatusChanged, ProjectPath: p.Path, Workspace: ws})
		}
	}
	for k, ws := range p.workspaces {
		if _, ok := m.busy[k]; ok {
			skipped = true
			continue
		}
		if _, ok := found[k]; !ok {
			delete(p.workspaces, k)
			m.ports.release(ws.Path)
			m.log.Info("workspace disappeared", "path", ws.Path, "branch", ws.Branch)
			m.Publish(Event{Kind: EventWorkspaceRemoved, ProjectPath: p.Path, Workspace: ws})
		}
	}
	p.missing = missing
	p.sig = sig
	if skipped {
		p.sig = ""
	}
}
