package workspace

import (
	"log/slog"
	"sync"
)

// EventKind names what changed.
type EventKind string

// Event kinds.
const (
	EventProjectAdded     EventKind = "project-added"
	EventProjectRemoved   EventKind = "project-removed"
	EventWorkspaceAdded   EventKind = "workspace-added"
	EventWorkspaceRemoved EventKind = "workspace-removed"
	EventDeleteProgress   EventKind = "delete-progress"
	EventDeleteFailed     EventKind = "delete-failed"
	EventMetadataChanged  EventKind = "metadata-changed"
	EventAgentChanged     EventKind = "agent-changed"
	EventStatusChanged    EventKind = "status-changed"
)

// DeleteStep is one ordered step of a workspace delete.
type DeleteStep string

// The steps of a delete, in order.
const (
	StepStopAgent      DeleteStep = "stop-agent"
	StepTeardown       DeleteStep = "teardown"
	StepRemoveWorktree DeleteStep = "remove-worktree"
	StepDeleteBranch   DeleteStep = "delete-branch"
	StepRemoveMetadata DeleteStep = "remove-metadata"
	StepDone           DeleteStep = "done"
)

// DeleteSteps lists the steps in the order they run. The project's
// teardown runs once the agent is stopped and before anything is removed.
// The metadata goes
// last, once the branch it belongs to is gone, so that a delete that fails
// or is cut short never leaves a workspace without its metadata.
var DeleteSteps = []DeleteStep{StepStopAgent, StepTeardown, StepRemoveWorktree, StepDeleteBranch, StepRemoveMetadata, StepDone}

// Event tells subscribers that something changed. Subscribers re-read what
// they show; the event says what and where, not the whole new state.
type Event struct {
	Kind EventKind `json:"kind"`
	// ProjectPath is the project concerned.
	ProjectPath string `json:"projectPath,omitempty"`
	// Workspace is the workspace concerned (for workspace, delete, metadata,
	// agent and status events).
	Workspace Workspace `json:"workspace,omitzero"`
	// Step is the delete step that has just started (delete-progress) or
	// failed (delete-failed).
	Step DeleteStep `json:"step,omitempty"`
	// Err describes a failure (delete-failed).
	Err string `json:"error,omitempty"`
	// Note tells what a finished delete (delete-progress, StepDone) kept
	// on purpose, e.g. "kept branch X: it existed before the workspace".
	Note string `json:"note,omitempty"`
	// Created marks the workspace-added event of a workspace that Create
	// made (not one found on disk): only those are prepared (package
	// prepare) before their agent starts.
	Created bool `json:"created,omitempty"`
}

// eventBuffer is the capacity of a subscriber's channel.
const eventBuffer = 256

// Events delivers change events to subscribers. The manager publishes its
// own there; the app builds one first and hands it to every part that
// publishes (agents, preparation, the status cache), so that none of them
// needs the manager to tell the others of a change.
type Events struct {
	log  *slog.Logger
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	ch      chan Event
	dropped int
}

// NewEvents returns an Events with no subscriber; log (nil: discarded)
// says when a subscriber falls behind.
func NewEvents(log *slog.Logger) *Events {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Events{log: log, subs: map[*subscriber]struct{}{}}
}

// Subscribe returns a channel of change events and a function that ends the
// subscription and closes the channel. The channel is buffered; events that
// do not fit because the subscriber is not reading are dropped (and logged)
// so that a slow subscriber never blocks the publisher. Subscribers re-read
// the state an event names, so a dropped event costs freshness only until
// the next one.
func (h *Events) Subscribe() (events <-chan Event, cancel func()) {
	s := &subscriber{ch: make(chan Event, eventBuffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, s)
			close(s.ch)
			h.mu.Unlock()
		})
	}
}

// Publish sends e to every subscriber without blocking.
func (h *Events) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- e:
			if s.dropped > 0 {
				h.log.Warn("event subscriber caught up", "dropped", s.dropped)
				s.dropped = 0
			}
		default:
			s.dropped++
			if s.dropped == 1 {
				h.log.Warn("event subscriber is not keeping up; dropping events", "kind", string(e.Kind))
			}
		}
	}
}
