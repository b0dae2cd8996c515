package mcp

import (
	"context"
	"strconv"
	"sync"
	"time"

	"codehydra/workspace"
)

// The per-caller limit of workspace_create: each new workspace is a
// worktree on disk and, soon after, a running agent, so one caller (an
// agent told to, or a leaked token) must not make them without bound. The
// general rate limit counts calls per second; this counts workspaces over
// minutes.

// CreateLimit bounds the workspaces one caller creates: at most Count
// within any Per, and at most Descendants alive that descend from one
// workspace. Zero values mean the defaults.
//
// A workspace's agent that creates a workspace starts an agent with a
// budget of its own; counted per token, a chain of children would have
// one each. So a workspace's creates count against the root of its
// createdBy chain (the workspace the user made, or the last one of the
// chain that was deleted): the root's agent and all that descend from it
// share one budget, and one cap on how many of them are alive.
type CreateLimit struct {
	Count       int
	Per         time.Duration
	Descendants int
}

// Defaults of CreateLimit (settings workspaceCreateLimit).
const (
	DefaultCreateCount                     = 10
	DefaultCreatePer         time.Duration = 10 * time.Minute
	DefaultCreateDescendants               = 20
)

// maxChain bounds the walk up a createdBy chain; a longer one (which the
// descendant cap keeps from being made) is cut there.
const maxChain = 1000

// maxCreateCallers is the number of callers above which those whose
// creates are all older than the window are forgotten.
const maxCreateCallers = 256

// LimitCreates returns ws with its Create limited per caller (as the
// token proves: the user, or each workspace's token, has a budget of its
// own). Give it to Options.Workspaces. A create over the limit fails with
// rate-limited, naming the limit and when to retry; a create that fails
// uses none of the budget.
func LimitCreates(ws Workspaces, l CreateLimit) Workspaces {
	if l.Count <= 0 {
		l.Count = DefaultCreateCount
	}
	if l.Per <= 0 {
		l.Per = DefaultCreatePer
	}
	if l.Descendants <= 0 {
		l.Descendants = DefaultCreateDescendants
	}
	return &createLimited{wrapped: ws, limit: l, now: time.Now, recent: map[string][]time.Time{}, pending: map[string]int{}, roots: map[string]string{}}
}

// wrapped is Workspaces under a name of its own: embedded as itself, the
// field would clash with its method Workspaces.
type wrapped = Workspaces

type createLimited struct {
	wrapped
	limit CreateLimit
	now   func() time.Time

	mu      sync.Mutex
	recent  map[string][]time.Time // budget → times of its creates within the window, oldest first
	pending map[string]int         // chain root → its creates under way
	// roots remembers the chain root of each workspace created through
	// the limit (a workspace's root never changes), so that a creator
	// deleted since (with its metadata) still leads its children to
	// their root: deleting itself must not give an agent's children a
	// fresh budget. It lasts as long as the process.
	roots map[string]string
}

// Create creates the workspace if the caller's budget allows: the user's
// own, or that of the root of the caller's createdBy chain, whose live
// descendants must also stay under the cap.
func (c *createLimited) Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	who := callerFrom(ctx)
	budget := who.name()
	if !who.isUser() {
		root, err := c.rootOf(ctx, who.ws.Path)
		if err != nil {
			return workspace.Workspace{}, err
		}
		budget = root
		if err := c.admitDescendant(ctx, root, who.ws.ProjectPath); err != nil {
			return workspace.Workspace{}, err
		}
		defer c.doneDescendant(root)
	}
	at, err := c.reserve(budget)
	if err != nil {
		return workspace.Workspace{}, err
	}
	ws, err := c.wrapped.Create(ctx, o)
	if err != nil {
		c.release(budget, at)
		return ws, err
	}
	if !who.isUser() {
		c.mu.Lock()
		c.roots[ws.Path] = budget
		c.mu.Unlock()
	}
	return ws, nil
}

// parentOf is the workspace whose agent created the one at path ("" for
// one the user made); an error when its metadata cannot be read.
func (c *createLimited) parentOf(ctx context.Context, path string) (string, error) {
	md, err := c.wrapped.Metadata(ctx, path)
	if err != nil {
		return "", err
	}
	return md[workspace.MetadataCreatedBy], nil
}

// rootOf walks the createdBy chain up from path to its root: the first
// workspace that no agent created, or, for a creator deleted before this
// run (its metadata gone with it, and not in c.roots), the last one
// named.
func (c *createLimited) rootOf(ctx context.Context, path string) (string, error) {
	seen := map[string]bool{}
	for range maxChain {
		c.mu.Lock()
		root, known := c.roots[path]
		c.mu.Unlock()
		if known {
			return root, nil
		}
		seen[path] = true
		if _, err := c.wrapped.Resolve(path); err != nil {
			return path, nil // deleted: the chain's root as far as it goes
		}
		parent, err := c.parentOf(ctx, path)
		if err != nil {
			return "", workspace.Errorf(workspace.CodeInternal, "cannot read which workspace created %s, to count its creates: %v; try again", path, err)
		}
		if parent == "" || seen[parent] {
			return path, nil
		}
		path = parent
	}
	return path, nil
}

// admitDescendant counts a create under way below root, or refuses it
// when root already has Descendants alive (and under way). A chain stays
// in its project (a workspace's token creates only there), so only that
// project's workspaces are looked at; one whose creator cannot be read
// (its git broken, by its agent or otherwise) is not counted rather than
// keeping every other agent from creating.
func (c *createLimited) admitDescendant(ctx context.Context, root, project string) error {
	alive := 0
	all, err := c.wrapped.Workspaces(project)
	if err != nil {
		return workspace.Errorf(workspace.CodeInternal, "cannot list the workspaces of %s, to count the descendants of %s: %v; try again", project, root, err)
	}
	for _, ws := range all {
		if ws.Path == root {
			continue
		}
		if r, err := c.rootOf(ctx, ws.Path); err == nil && r == root {
			alive++
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if alive+c.pending[root] >= c.limit.Descendants {
		return workspace.Errorf(workspace.CodeRateLimited,
			"the workspaces started from %s (its children and theirs) number %d, the limit (workspaceCreateLimit.descendants in the settings); delete some of them first", root, alive+c.pending[root])
	}
	c.pending[root]++
	return nil
}

// doneDescendant ends a create under way below root.
func (c *createLimited) doneDescendant(root string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[root]--; c.pending[root] <= 0 {
		delete(c.pending, root)
	}
}

// reserve counts a create of who at now, or refuses it when who made
// Count creates within the window already. Reserving before the create
// keeps concurrent creates of one caller within the limit too.
func (c *createLimited) reserve(who string) (time.Time, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recent) > maxCreateCallers {
		for k, ts := range c.recent {
			if len(within(ts, now, c.limit.Per)) == 0 {
				delete(c.recent, k)
			}
		}
	}
	ts := within(c.recent[who], now, c.limit.Per)
	if len(ts) >= c.limit.Count {
		c.recent[who] = ts
		retry := ts[0].Add(c.limit.Per).Sub(now).Round(time.Second)
		return time.Time{}, workspace.Errorf(workspace.CodeRateLimited,
			"this caller (with the workspaces its chain of creators started, if any) created %d workspaces within %s, its limit (workspaceCreateLimit in the settings); retry in %s",
			len(ts), minutes(c.limit.Per), max(retry, time.Second))
	}
	c.recent[who] = append(ts, now)
	return now, nil
}

// release gives back the create reserved at at, which did not happen.
func (c *createLimited) release(who string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.recent[who]
	for i, t := range ts {
		if t.Equal(at) {
			c.recent[who] = append(ts[:i:i], ts[i+1:]...)
			return
		}
	}
}

// minutes writes d as the settings give it, in minutes when it is whole
// minutes.
func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		if d == time.Minute {
			return "1 minute"
		}
		return strconv.FormatInt(int64(d/time.Minute), 10) + " minutes"
	}
	return d.String()
}

// within drops the times older than window before now.
func within(ts []time.Time, now time.Time, window time.Duration) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= window {
		i++
	}
	return ts[i:]
}
