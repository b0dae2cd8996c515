package workspace

import (
	"context"
	"errors"
)

// StatusCache answers the git part of Status (IsDirty, Base, Ahead,
// Behind) from memory, so that a warm Status runs no git. Package
// statuscache implements it on file-system events.
type StatusCache interface {
	// GitStatus returns the git part of ws's Status (Agent left empty).
	// A call made right after a change waits for the refresh that change
	// started, so it never reports the state from before it. ErrNotCached
	// means it cannot answer (not running, or ws just left it): the
	// manager then asks git itself.
	GitStatus(ctx context.Context, ws Workspace) (Status, error)
}

// ErrNotCached is what a StatusCache answers when it cannot tell: Status
// then asks git.
var ErrNotCached = errors.New("status not cached")

// SetStatusCache sets the cache Status answers from; nil makes every
// Status ask git.
func (m *Manager) SetStatusCache(c StatusCache) {
	m.mu.Lock()
	m.statusCache = c
	m.mu.Unlock()
}

func (m *Manager) currentStatusCache() StatusCache {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.statusCache
}
