package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Escalation (the setting "escalation"): who hears first of the permission
// requests and questions of a child workspace's agent (one created by
// another workspace's agent). By default the user does, at once; with
// parent-first, the parent's agent is told of each request as a prompt
// and answers it with workspace_answer, and the user hears of it only if
// the parent has not answered within After.

// Escalation is the setting's value.
type Escalation struct {
	ParentFirst bool
	After       time.Duration
}

// EscalatorOptions are what an Escalator needs.
type EscalatorOptions struct {
	// Agents are the agents' own statuses (without the marks of Mark).
	Agents interface{ AgentStatus(path string) AgentStatus }
	// Tell gives text to the current session of the agent of the
	// workspace at path as a prompt.
	Tell func(ctx context.Context, path, text string) error
	// ParentOf is the workspace whose agent created the one at path ("" for
	// none): its createdBy.
	ParentOf func(ctx context.Context, path string) (string, error)
	// Setting is read at each new request, so a change applies at once.
	Setting func() Escalation
	// Changed says that what Mark reports of the workspace at path
	// changed (a hold ended): the UIs look again.
	Changed func(path string)
	// AfterFunc defaults to time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	Logger    *slog.Logger
}

// Escalator holds a child's new requests for its parent's agent while
// escalation is parent-first: Mark names the parent on each held request
// (PendingRequest.Parent), which the UIs leave to the parent until the
// hold ends, and Run tells the parent's agent of each.
type Escalator struct {
	o EscalatorOptions

	mu sync.Mutex
	// parents are the workspaces' createdBy ("" none), read when a
	// workspace appears or its metadata changes, so that Mark needs no
	// I/O.
	parents map[string]string
	// decided are the requests already seen: held or not, each is decided
	// once.
	decided map[string]bool
	holds   map[string]*hold
}

// hold is a request left to the parent's agent until stop.
type hold struct {
	path, parent string
	req          PendingRequest
	stop         func() bool
	told         bool
}

// NewEscalator returns an escalator; Run makes it follow the workspaces.
func NewEscalator(o EscalatorOptions) *Escalator {
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Escalator{o: o, parents: map[string]string{}, decided: map[string]bool{}, holds: map[string]*hold{}}
}

func requestKey(path, id string) string { return path + "\x00" + id }

// Mark returns st, the status of the agent of the workspace at path, with
// Parent set on each request held for the parent's agent. A request seen
// here for the first time is held if escalation is parent-first, the
// workspace has a parent and the parent's agent is ready.
func (e *Escalator) Mark(path string, st AgentStatus) AgentStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pruneLocked(path, st.Requests)
	if len(st.Requests) == 0 {
		return st
	}
	st.Requests = slices.Clone(st.Requests)
	for i, r := range st.Requests {
		k := requestKey(path, r.ID)
		if !e.decided[k] {
			e.decided[k] = true
			e.holdLocked(path, r)
		}
		if h := e.holds[k]; h != nil {
			st.Requests[i].Parent = h.parent
		}
	}
	return st
}

// holdLocked holds r for the parent's agent, if it is the parent's first.
func (e *Escalator) holdLocked(path string, r PendingRequest) {
	set := e.o.Setting()
	parent := e.parents[path]
	if !set.ParentFirst || parent == "" || e.o.Agents.AgentStatus(parent).State != AgentStateReady {
		return
	}
	k := requestKey(path, r.ID)
	h := &hold{path: path, parent: parent, req: r}
	h.stop = e.o.AfterFunc(set.After, func() { e.release(k, "the parent did not answer in time") })
	e.holds[k] = h
}

// pruneLocked forgets the requests of path that are no longer pending.
func (e *Escalator) pruneLocked(path string, pending []PendingRequest) {
	prefix := requestKey(path, "")
	for k := range e.decided {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		id := strings.TrimPrefix(k, prefix)
		if slices.ContainsFunc(pending, func(r PendingRequest) bool { return r.ID == id }) {
			continue
		}
		delete(e.decided, k)
		if h := e.holds[k]; h != nil {
			h.stop()
			delete(e.holds, k)
		}
	}
}

// release ends the hold of request k: the user hears of it now.
func (e *Escalator) release(k, why string) {
	e.mu.Lock()
	h := e.holds[k]
	delete(e.holds, k)
	e.mu.Unlock()
	if h == nil {
		return
	}
	h.stop()
	e.o.Logger.Info("a child's request goes to the user", slog.String("workspace", h.path),
		slog.String("request", h.req.ID), slog.String("why", why))
	e.o.Changed(h.path)
}

// tellTimeout bounds the prompt to a parent's agent.
const tellTimeout = 30 * time.Second

// observe decides the new requests of the workspace at path and tells
// the parents' agents of each request held; a parent that cannot be told
// leaves the request to the user at once.
func (e *Escalator) observe(ctx context.Context, path string) {
	e.Mark(path, e.o.Agents.AgentStatus(path))
	e.mu.Lock()
	var tell []*hold
	// Every hold not yet told, not only path's: Mark may have made one
	// (the tray read the status) for an event this follower missed.
	for _, h := range e.holds {
		if !h.told {
			h.told = true
			tell = append(tell, h)
		}
	}
	e.mu.Unlock()
	for _, h := range tell {
		tctx, cancel := context.WithTimeout(ctx, tellTimeout)
		err := e.o.Tell(tctx, h.parent, ParentPrompt(h.path, h.req, e.o.Setting().After))
		cancel()
		if err != nil {
			e.o.Logger.Warn("cannot tell the parent's agent of a child's request", slog.String("workspace", h.path),
				slog.String("parent", h.parent), slog.Any("err", err))
			e.release(requestKey(h.path, h.req.ID), "the parent's agent could not be told")
			continue
		}
		e.o.Logger.Info("a child's request went to its parent's agent first", slog.String("workspace", h.path),
			slog.String("parent", h.parent), slog.String("request", h.req.ID))
	}
}

// readParent records the createdBy of the workspace at path.
func (e *Escalator) readParent(ctx context.Context, path string) {
	p, err := e.o.ParentOf(ctx, path)
	if err != nil {
		e.o.Logger.Debug("cannot read a workspace's parent", slog.String("workspace", path), slog.Any("err", err))
		return
	}
	e.mu.Lock()
	e.parents[path] = p
	e.mu.Unlock()
}

// Run follows the workspaces' events (a channel from Subscribe) until
// ctx ends: it learns their parents and tells parents of new requests.
// Holds still running when it returns end, so the user hears of them.
func (e *Escalator) Run(ctx context.Context, events <-chan Event) {
	Follow(ctx, events, func(batch []Event) {
		for _, ev := range batch {
			switch ev.Kind {
			case EventWorkspaceAdded, EventMetadataChanged:
				e.readParent(ctx, ev.Workspace.Path)
			case EventWorkspaceRemoved:
				e.mu.Lock()
				delete(e.parents, ev.Workspace.Path)
				// Its requests went with it: forget them and end their holds.
				e.pruneLocked(ev.Workspace.Path, nil)
				e.mu.Unlock()
			case EventAgentChanged:
				e.observe(ctx, ev.Workspace.Path)
			}
		}
	})
	e.mu.Lock()
	keys := make([]string, 0, len(e.holds))
	for k := range e.holds {
		keys = append(keys, k)
	}
	e.mu.Unlock()
	for _, k := range keys {
		e.release(k, "CodeHydra stops")
	}
}

// ParentPrompt is what the parent's agent is told of a request of the
// agent of its child at path. The request's words are the child's: they
// are quoted as what the child asks, not as instructions.
func ParentPrompt(path string, r PendingRequest, after time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CodeHydra: the agent of your child workspace %s waits for an answer (escalation parent-first). "+
		"Answer with the tool workspace_answer; if you have not answered within %s, the user is asked.\n\n", path, after)
	fmt.Fprintf(&b, "workspace: %s\nrequestId: %s\nkind: %s\n", path, r.ID, r.Kind)
	switch r.Kind {
	case RequestPermission:
		fmt.Fprintf(&b, "the child asks to use %q on: %q\n", r.Tool, r.Summary)
		// The summary is cut to one short line; what "once" allows is
		// the patterns, each in full, so that nothing past the cut goes
		// unseen.
		if len(r.Patterns) > 0 {
			fmt.Fprintf(&b, "in full, what it would run or touch (judge all of it): %q\n", r.Patterns)
		}
		b.WriteString("\nreply {\"permission\":\"once\"} to allow it this time, or {\"permission\":\"reject\",\"message\":\"what to do instead\"}.")
	case RequestQuestion:
		for i, q := range r.Questions {
			fmt.Fprintf(&b, "question %d: %q", i+1, q.Text)
			if len(q.Options) > 0 {
				fmt.Fprintf(&b, " options: %q", q.Options)
			}
			if q.Multiple {
				b.WriteString(" (several may be chosen)")
			}
			if q.Custom {
				b.WriteString(" (own words allowed)")
			}
			b.WriteString("\n")
		}
		b.WriteString("\nreply {\"answers\":[[\"label\"]]} with one list of chosen labels per question, or {\"reject\":true}.")
	}
	return b.String()
}
