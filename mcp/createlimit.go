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
// within any Per. Zero values mean the defaults.
type CreateLimit struct {
	Count int
	Per   time.Duration
}

// Defaults of CreateLimit (settings workspaceCreateLimit).
const (
	DefaultCreateCount               = 10
	DefaultCreatePer   time.Duration = 10 * time.Minute
)

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
	return &createLimited{wrapped: ws, limit: l, now: time.Now, recent: map[string][]time.Time{}}
}

// wrapped is Workspaces under a name of its own: embedded as itself, the
// field would clash with its method Workspaces.
type wrapped = Workspaces

type createLimited struct {
	wrapped
	limit CreateLimit
	now   func() time.Time

	mu     sync.Mutex
	recent map[string][]time.Time // caller → times of its creates within the window, oldest first
}

// Create creates the workspace if the caller's budget allows.
func (c *createLimited) Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	who := callerFrom(ctx).name()
	at, err := c.reserve(who)
	if err != nil {
		return workspace.Workspace{}, err
	}
	ws, err := c.wrapped.Create(ctx, o)
	if err != nil {
		c.release(who, at)
	}
	return ws, err
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
			"this caller created %d workspaces within %s, its limit (workspaceCreateLimit in the settings); retry in %s",
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
