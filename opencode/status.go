package opencode

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"codehydra/workspace"
)

// SessionSummary is what the sessions of one agent server are doing.
type SessionSummary struct {
	Type   workspace.AgentType
	Counts workspace.AgentCounts
	// NeedsInput counts sessions with an unanswered permission request or
	// question.
	NeedsInput int
	// Retry is set while sessions retry a failed model request.
	Retry workspace.AgentRetry
	// Requests are the pending permission requests and questions, oldest
	// first (opencode's IDs grow with time); nil for none.
	Requests []workspace.PendingRequest
}

// equal reports whether s and o say the same.
func (s SessionSummary) equal(o SessionSummary) bool { return reflect.DeepEqual(s, o) }

// sessionInfo is what the tracker knows of one session.
type sessionInfo struct {
	child bool // has a parent session (a subagent); not counted
	busy  bool // busy or retry
	// retrying is true while the session waits to retry a failed model
	// request; retry then holds opencode's attempt, message and next try
	// (Sessions unused).
	retrying bool
	retry    workspace.AgentRetry
}

// sessionStatus is opencode's status of a session; attempt, message and
// next are set for type "retry".
type sessionStatus struct {
	Type    string  `json:"type"`
	Attempt int     `json:"attempt"`
	Message string  `json:"message"`
	Next    float64 `json:"next"`
}

// known reports whether the tracker understands the status type.
func (st sessionStatus) known() bool {
	return st.Type == "busy" || st.Type == "retry" || st.Type == "idle"
}

// setStatus records a session's (known) status.
func (si *sessionInfo) setStatus(st sessionStatus) {
	si.busy = st.Type != "idle"
	si.retrying = st.Type == "retry"
	si.retry = workspace.AgentRetry{}
	if si.retrying {
		si.retry = workspace.AgentRetry{Attempt: st.Attempt, Message: st.Message, Next: int64(st.Next)}
	}
}

// Tracker folds an agent server's events into a SessionSummary. The zero
// value is not usable; use NewTracker. It is not safe for concurrent use.
//
// Counted are the root sessions (sessions without a parent) that were
// active while the server ran: created, or reported busy, idle or retrying.
// Old sessions that nobody touched since the server started do not count,
// so a fresh agent reports "none" and one finished turn "idle". A
// subagent's session is not counted (its parent is busy meanwhile), but a
// question or permission request in it needs the user as much as one in a
// root session, and a model it cannot reach stalls the turn as much.
type Tracker struct {
	sessions map[string]*sessionInfo
	// pending maps request IDs (permission or question) to the request.
	pending map[string]workspace.PendingRequest
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{sessions: map[string]*sessionInfo{}, pending: map[string]workspace.PendingRequest{}}
}

// Summary returns the current summary.
func (t *Tracker) Summary() SessionSummary {
	var s SessionSummary
	var retrying string
	for id, si := range t.sessions {
		if si.retrying {
			s.Retry.Sessions++
			// The session that tried most speaks for all; the ID breaks
			// ties, so that the summary does not depend on map order.
			if r := si.retry; retrying == "" || r.Attempt > s.Retry.Attempt || r.Attempt == s.Retry.Attempt && id < retrying {
				retrying = id
				s.Retry.Attempt, s.Retry.Message, s.Retry.Next = r.Attempt, r.Message, r.Next
			}
		}
		if si.child {
			continue
		}
		if si.busy {
			s.Counts.Busy++
		} else {
			s.Counts.Idle++
		}
	}
	s.Counts.Total = s.Counts.Idle + s.Counts.Busy
	s.Type = typeOf(s.Counts)
	waiting := map[string]bool{}
	for _, r := range t.pending {
		waiting[r.SessionID] = true
		s.Requests = append(s.Requests, r)
	}
	s.NeedsInput = len(waiting)
	slices.SortFunc(s.Requests, func(a, b workspace.PendingRequest) int { return strings.Compare(a.ID, b.ID) })
	return s
}

func typeOf(c workspace.AgentCounts) workspace.AgentType {
	switch {
	case c.Total == 0:
		return workspace.AgentNone
	case c.Busy == 0:
		return workspace.AgentIdle
	case c.Idle == 0:
		return workspace.AgentBusy
	default:
		return workspace.AgentMixed
	}
}

func (t *Tracker) session(id string) *sessionInfo {
	si := t.sessions[id]
	if si == nil {
		si = &sessionInfo{}
		t.sessions[id] = si
	}
	return si
}

// eventProps is the union of the properties the tracker reads; a
// request asked is a wireRequest.
type eventProps struct {
	wireRequest
	RequestID string        `json:"requestID"`
	Status    sessionStatus `json:"status"`
	Info      struct {
		ID       string `json:"id"`
		ParentID string `json:"parentID"`
	} `json:"info"`
}

// Apply folds one event into the tracker and reports whether the summary
// may have changed. It returns resync=true for events after which the
// server's state must be read afresh (the instance was disposed).
func (t *Tracker) Apply(e Event) (changed, resync bool) {
	typ := normalizeType(e.Type)
	switch typ {
	case EventInstanceDisposed, EventGlobalDisposed:
		return false, true
	case EventSessionCreated, EventSessionUpdated, EventSessionDeleted, EventSessionStatus,
		EventSessionIdle, EventPermissionAsked, EventPermissionReplied, EventQuestionAsked,
		EventQuestionReplied, EventQuestionRejected:
	default:
		return false, false
	}
	var p eventProps
	if len(e.Properties) == 0 || json.Unmarshal(e.Properties, &p) != nil {
		return false, false
	}
	sid := p.SessionID
	if sid == "" {
		sid = p.Info.ID
	}
	if sid == "" {
		return false, false
	}
	before := t.Summary()
	switch typ {
	case EventSessionCreated:
		t.session(sid).child = p.Info.ParentID != ""
	case EventSessionUpdated:
		// An update tells whether a session is a child; it is no sign of
		// activity, so it only touches sessions already counted.
		if si := t.sessions[sid]; si != nil {
			si.child = p.Info.ParentID != ""
		}
	case EventSessionDeleted:
		delete(t.sessions, sid)
		for id, r := range t.pending {
			if r.SessionID == sid {
				delete(t.pending, id)
			}
		}
	case EventSessionStatus:
		if !p.Status.known() {
			return false, false
		}
		t.session(sid).setStatus(p.Status)
	case EventSessionIdle:
		t.session(sid).setStatus(sessionStatus{Type: "idle"})
	case EventPermissionAsked, EventQuestionAsked:
		kind := workspace.RequestPermission
		if typ == EventQuestionAsked {
			kind = workspace.RequestQuestion
		}
		r, ok := p.pending(kind)
		if !ok {
			return false, false
		}
		t.pending[r.ID] = r
	case EventPermissionReplied, EventQuestionReplied, EventQuestionRejected:
		delete(t.pending, p.RequestID)
	}
	return !t.Summary().equal(before), false
}

// normalizeType maps opencode's ".v2." event names onto the classic ones.
func normalizeType(t string) string {
	switch t {
	case "permission.v2.asked":
		return EventPermissionAsked
	case "permission.v2.replied":
		return EventPermissionReplied
	case "question.v2.asked":
		return EventQuestionAsked
	case "question.v2.replied":
		return EventQuestionReplied
	case "question.v2.rejected":
		return EventQuestionRejected
	}
	return t
}

// Snapshot is a server's state as its REST API reports it: GET
// /session/status (only sessions that are not idle appear), GET /permission
// and GET /question (pending requests), and which sessions are children.
type Snapshot struct {
	// Status maps session IDs to "busy", "retry" or "idle".
	Status map[string]string
	// Retry holds, of sessions whose status is "retry", opencode's
	// attempt, message and next try (Sessions unused).
	Retry map[string]workspace.AgentRetry
	// Pending are the pending requests.
	Pending []workspace.PendingRequest
	// Children holds the IDs of sessions known to have a parent.
	Children map[string]bool
}

// Resync replaces what the tracker believes with a snapshot taken after a
// (re)connect, and reports whether the summary changed. Sessions the
// tracker counted that the snapshot does not list as active became idle
// meanwhile (opencode drops idle sessions from /session/status).
func (t *Tracker) Resync(s Snapshot) bool {
	before := t.Summary()
	for _, si := range t.sessions {
		si.setStatus(sessionStatus{Type: "idle"})
	}
	for sid, typ := range s.Status {
		r := s.Retry[sid]
		st := sessionStatus{Type: typ, Attempt: r.Attempt, Message: r.Message, Next: float64(r.Next)}
		if si := t.session(sid); st.known() {
			si.setStatus(st)
		}
	}
	for sid := range s.Children {
		if si := t.sessions[sid]; si != nil {
			si.child = true
		}
	}
	t.pending = map[string]workspace.PendingRequest{}
	for _, r := range s.Pending {
		t.pending[r.ID] = r
	}
	return !t.Summary().equal(before)
}

// Reset forgets every session, as when the server is gone.
func (t *Tracker) Reset() bool {
	before := t.Summary()
	t.sessions = map[string]*sessionInfo{}
	t.pending = map[string]workspace.PendingRequest{}
	return !t.Summary().equal(before)
}

// Knows reports whether the tracker counts or has seen session id.
func (t *Tracker) Knows(id string) bool {
	_, ok := t.sessions[id]
	return ok
}
