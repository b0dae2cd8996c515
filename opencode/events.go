package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"codehydra/internal/sse"
	"codehydra/workspace"
)

// Event is one event of an opencode server's GET /event stream. On the wire
// each SSE message carries, in its data field, JSON of the form
// {"id":"evt_…","type":"session.status","properties":{…}}; opencode 1.18
// sends no SSE "event:" field, so the type lives inside the JSON.
type Event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// The event types the status tracker reads. The ".v2." variants come from
// opencode's newer API and are treated like the classic ones.
const (
	EventServerConnected   = "server.connected"
	EventServerHeartbeat   = "server.heartbeat"
	EventInstanceDisposed  = "server.instance.disposed"
	EventGlobalDisposed    = "global.disposed"
	EventSessionCreated    = "session.created"
	EventSessionUpdated    = "session.updated"
	EventSessionDeleted    = "session.deleted"
	EventSessionStatus     = "session.status"
	EventSessionIdle       = "session.idle"
	EventPermissionAsked   = "permission.asked"
	EventPermissionReplied = "permission.replied"
	EventQuestionAsked     = "question.asked"
	EventQuestionReplied   = "question.replied"
	EventQuestionRejected  = "question.rejected"
)

// ErrBadEvent reports an SSE message whose data is not an opencode event:
// not a JSON object, or one without a type.
var ErrBadEvent = errors.New("not an opencode event")

// ParseEvent decodes the data of one SSE message. Errors wrap ErrBadEvent.
func ParseEvent(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if e.Type == "" {
		return Event{}, fmt.Errorf("%w: no type", ErrBadEvent)
	}
	return e, nil
}

// maxEventSize bounds one SSE message; opencode events carry message parts,
// which can be large (a file the agent read), but not unboundedly so.
const maxEventSize = 16 << 20

// ErrEventTooLarge reports an SSE message over the size limit. EventReader
// skips such a message and reports this error once; reading may go on.
var ErrEventTooLarge = sse.ErrTooLarge

// EventReader reads SSE messages (text/event-stream, as package sse reads
// them) and decodes their data as opencode events.
type EventReader struct{ sr *sse.Reader }

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{sr: sse.NewReader(r, maxEventSize)}
}

// Next returns the next event. A message whose data is not an event is
// returned as an error wrapping ErrBadEvent, an over-long one as
// ErrEventTooLarge; after either the caller may go on reading. At the end
// of the stream Next returns io.EOF (io.ErrUnexpectedEOF if the stream
// ended inside a message).
func (er *EventReader) Next() (Event, error) {
	data, err := er.sr.Next()
	if err != nil {
		return Event{}, err
	}
	return ParseEvent(data)
}

// watchEvents follows the event stream of the agent server that api
// reaches and publishes its summary while a is ready. The returned func
// stops the watcher and waits until it is gone.
func (s *Supervisor) watchEvents(ctx context.Context, key string, a *agent, api agentAPI) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w := &eventWatcher{
		api: api, log: s.log.With(slog.String("workspace", a.ws.Path)),
		retryMin: s.opts.EventRetryMin, retryMax: s.opts.EventRetryMax, idle: s.opts.EventIdle,
		publish: func(sum SessionSummary) {
			s.set(key, a, func() {
				if a.state == workspace.AgentStateReady {
					a.summary = sum
				}
			})
		},
		dir: a.ws.Path, now: s.opts.Now, loc: time.Local,
		publishUsage: func(u Usage, spent workspace.AgentUsage) {
			s.set(key, a, func() {
				a.usage = u
				s.spent = s.spent.Plus(spent)
			})
		},
	}
	go func() {
		defer close(done)
		w.run(wctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// eventWatcher follows one agent server's event stream and keeps a Tracker
// up to date. After each (re)connect it reads the server's state afresh, so
// that events missed while disconnected do not leave a session "busy"
// forever.
type eventWatcher struct {
	api      agentAPI
	log      *slog.Logger
	retryMin time.Duration
	retryMax time.Duration
	// idle is how long a silent stream is trusted; opencode sends a
	// heartbeat every 10 s.
	idle time.Duration
	// publish receives the summary whenever it changed.
	publish func(SessionSummary)

	tracker *Tracker

	// usage follows what the sessions of dir (the agent's worktree) cost,
	// telling days by now in loc; publishUsage receives it whenever it
	// changed, with what it grew by since the first read (the agent's
	// spending while CodeHydra runs).
	dir          string
	usage        *UsageTracker
	usageRead    bool
	warnedUsage  bool
	now          func() time.Time
	loc          *time.Location
	publishUsage func(u Usage, spent workspace.AgentUsage)

	// warnedPending records which lists of pending requests could not be
	// read and were warned about (see pendingUnreadable).
	warnedPending map[string]bool
}

// run follows the stream until ctx ends. A stream that breaks after it was
// open is logged as a warning; while it cannot be reopened, each further
// attempt is logged at debug level, so that a server that stays
// unreachable does not flood the log; the reopening that ends the outage
// is logged too.
func (w *eventWatcher) run(ctx context.Context) {
	w.tracker = NewTracker()
	w.usage = NewUsageTracker(w.loc, w.dir)
	delay := w.retryMin
	broken := false
	for ctx.Err() == nil {
		connected, err := w.follow(ctx, broken)
		if ctx.Err() != nil {
			return
		}
		if connected {
			delay = w.retryMin
		}
		if connected || !broken {
			w.log.Warn("agent event stream broke; its status may lag until it is reopened",
				slog.String("server", w.api.base), slog.Duration("retry in", delay), slog.Any("err", err))
		} else {
			w.log.Debug("agent event stream still cannot be reopened", slog.String("server", w.api.base),
				slog.Duration("retry in", delay), slog.Any("err", err))
		}
		broken = true
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, w.retryMax)
	}
}

// follow makes one connection and reads it until it breaks. connected
// reports whether the stream was opened; reopening says that an earlier
// stream broke (its recovery is logged).
func (w *eventWatcher) follow(ctx context.Context, reopening bool) (connected bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := w.api.request(cctx, http.MethodGet, "/event")
	if err != nil {
		return false, fmt.Errorf("open event stream: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	// A stream that does not answer or goes silent (a half-open
	// connection) is dropped and reopened; any event, heartbeats included,
	// proves it alive.
	watchdog := time.AfterFunc(w.idle, cancel)
	defer watchdog.Stop()
	resp, err := w.api.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("open event stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("open event stream: %s", resp.Status)
	}

	// The stream is open before the state is read, so an event that
	// happens meanwhile is seen afterwards rather than lost. A server that
	// cannot say its state does not count as connected, so that retries
	// slow down.
	if err := w.resync(cctx); err != nil {
		return false, fmt.Errorf("read the agent's state: %w", err)
	}
	if reopening {
		w.log.Info("agent event stream reopened; status read afresh", slog.String("server", w.api.base))
	}
	return true, w.read(cctx, resp.Body, func() { watchdog.Reset(w.idle) })
}

// read applies the events of an open stream until it breaks, calling alive
// on everything the stream delivers (heartbeats included).
func (w *eventWatcher) read(ctx context.Context, body io.Reader, alive func()) error {
	er := NewEventReader(body)
	for {
		e, err := er.Next()
		alive()
		if err != nil {
			if errors.Is(err, ErrBadEvent) || errors.Is(err, ErrEventTooLarge) {
				continue
			}
			return fmt.Errorf("read event stream: %w", err)
		}
		if usageEvent(e.Type) {
			w.foldUsage(func() bool { return w.usage.Apply(e) })
		}
		changed, resync := w.tracker.Apply(e)
		if resync {
			if err := w.resync(ctx); err != nil {
				return fmt.Errorf("read the agent's state: %w", err)
			}
			continue
		}
		if changed {
			w.publish(w.tracker.Summary())
		}
	}
}

// pendingUnreadable logs that a list of pending requests could not be
// read: as a warning the first time for this agent (its needs-input count
// may be low), then at debug level, since every resync would repeat it.
func (w *eventWatcher) pendingUnreadable(what string, err error) {
	level := slog.LevelDebug
	if !w.warnedPending[what] {
		level = slog.LevelWarn
		if w.warnedPending == nil {
			w.warnedPending = map[string]bool{}
		}
		w.warnedPending[what] = true
	}
	w.log.Log(context.Background(), level, "cannot list the agent's pending "+what+"; its needs-input count may be low",
		slog.String("server", w.api.base), slog.Any("err", err))
}

// resyncTimeout bounds each read of a resync.
const resyncTimeout = 10 * time.Second

// resync reads the server's state and folds it into the tracker.
func (w *eventWatcher) resync(ctx context.Context) error {
	var snap Snapshot
	var status map[string]sessionStatus
	if err := w.api.getJSON(ctx, "/session/status", resyncTimeout, &status); err != nil {
		return err
	}
	snap.Status = make(map[string]string, len(status))
	snap.Retry = map[string]workspace.AgentRetry{}
	for id, st := range status {
		snap.Status[id] = st.Type
		if st.Type == "retry" {
			snap.Retry[id] = workspace.AgentRetry{Attempt: st.Attempt, Message: st.Message, Next: int64(st.Next)}
		}
	}
	var perms, questions []wireRequest
	// Pending requests are a refinement; a server without these lists
	// still reports busy and idle.
	if err := w.api.getJSON(ctx, "/permission", resyncTimeout, &perms); err != nil && ctx.Err() == nil {
		w.pendingUnreadable("permissions", err)
	}
	if err := w.api.getJSON(ctx, "/question", resyncTimeout, &questions); err != nil && ctx.Err() == nil {
		w.pendingUnreadable("questions", err)
	}
	for kind, list := range map[string][]wireRequest{workspace.RequestPermission: perms, workspace.RequestQuestion: questions} {
		for _, w := range list {
			if r, ok := w.pending(kind); ok {
				snap.Pending = append(snap.Pending, r)
			}
		}
	}
	// A session first seen here may be a subagent's; ask.
	snap.Children = map[string]bool{}
	for id := range snap.Status {
		if w.tracker.Knows(id) {
			continue
		}
		var s struct {
			ParentID string `json:"parentID"`
		}
		if err := w.api.getJSON(ctx, "/session/"+url.PathEscape(id), resyncTimeout, &s); err == nil && s.ParentID != "" {
			snap.Children[id] = true
		}
	}
	if w.tracker.Resync(snap) {
		w.publish(w.tracker.Summary())
	}
	w.resyncUsage(ctx)
	return nil
}

// resyncUsage reads what the sessions cost afresh. Usage is a refinement
// too: a server that cannot say it keeps the last known.
func (w *eventWatcher) resyncUsage(ctx context.Context) {
	sessions, messages, err := readUsage(ctx, w.api, w.dir, w.now(), w.loc)
	if err != nil && ctx.Err() == nil {
		// As with pending requests: warned once, since every resync would
		// repeat it.
		level := slog.LevelDebug
		if !w.warnedUsage {
			level, w.warnedUsage = slog.LevelWarn, true
		}
		w.log.Log(ctx, level, "cannot read what the agent's sessions cost; its usage may be low",
			slog.String("server", w.api.base), slog.Any("err", err))
	}
	if sessions == nil {
		return
	}
	w.foldUsage(func() bool { return w.usage.Resync(sessions, messages) })
	w.usageRead = true
}

// foldUsage applies fold to the usage tracker and publishes the usage if
// it changed.
func (w *eventWatcher) foldUsage(fold func() bool) {
	before := w.usage.Usage().Total
	if !fold() {
		return
	}
	u := w.usage.Usage()
	var spent workspace.AgentUsage
	if w.usageRead {
		spent = growth(before, u.Total)
	}
	w.publishUsage(u, spent)
}

// growth is what grew from before to after; what shrank (a session
// deleted) counts as nothing, so that counters only go up.
func growth(before, after workspace.AgentUsage) workspace.AgentUsage {
	return workspace.AgentUsage{
		InputTokens:  max(after.InputTokens-before.InputTokens, 0),
		OutputTokens: max(after.OutputTokens-before.OutputTokens, 0),
		Cost:         max(after.Cost-before.Cost, 0),
	}
}
