package statuscache

import (
	"context"
	"errors"

	"codehydra/workspace"
)

// ErrNotCached is what GitStatus answers when the cache cannot tell (not
// running, or the workspace just left it): ask git.
var ErrNotCached = errors.New("status not cached")

// Workspaces is a manager whose Status answers the git part from a cache
// (Over).
type Workspaces struct {
	*workspace.Manager
	cache gitStatuses
}

// gitStatuses is what Workspaces reads the git part from: a Cache.
type gitStatuses interface {
	GitStatus(ctx context.Context, ws workspace.Workspace) (workspace.Status, error)
}

// Over returns m with Status answered from c: a warm call runs no git at
// all; while c cannot answer (ErrNotCached), m asks git.
func Over(m *workspace.Manager, c *Cache) Workspaces { return Workspaces{m, c} }

// Status is the manager's Status, its git part from the cache when the
// cache can answer.
func (w Workspaces) Status(ctx context.Context, path string) (workspace.Status, error) {
	ws, err := w.Resolve(path)
	if err != nil {
		return workspace.Status{}, err
	}
	st, err := w.cache.GitStatus(ctx, ws)
	if errors.Is(err, ErrNotCached) {
		return w.Manager.Status(ctx, path)
	}
	if err != nil {
		return workspace.Status{}, err
	}
	st.Agent = w.AgentStatus(ws.Path)
	st.Ports, st.PortsNote = w.Ports(ws.Path)
	return st, nil
}
