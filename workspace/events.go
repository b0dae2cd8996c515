package workspace

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
	StepRemoveWorktree DeleteStep = "remove-worktree"
	StepDeleteBranch   DeleteStep = "delete-branch"
	StepRemoveMetadata DeleteStep = "remove-metadata"
	StepDone           DeleteStep = "done"
)

// DeleteSteps lists the steps in the order they run. The metadata goes
// last, once the branch it belongs to is gone, so that a delete that fails
// or is cut short never leaves a workspace without its metadata.
var DeleteSteps = []DeleteStep{StepStopAgent, StepRemoveWorktree, StepDeleteBranch, StepRemoveMetadata, StepDone}

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
