package window

import (
	"log/slog"
	"strconv"

	"codehydra/workspace"
)

// Spec says which window to open, and for what: all a window process
// needs to build it, as it crosses the bridge.
type Spec struct {
	Kind Kind
	// Path is the project of KindCreate ("" to choose), the workspace of
	// KindAgentURL.
	Path      string
	Workspace workspace.Workspace // KindDelete, KindReview, KindMerge
	Project   workspace.Project   // KindRemoveProject
	// Title, Message and Action are a KindConfirm question's; Title and
	// Message a KindError window's. Title also names what a KindAgentURL
	// window stands in for (the menu item).
	Title, Message, Action string
	// Link is the agent's address (KindAgentURL).
	Link string
	// Seq tells KindError and KindElicit windows apart: each gets its
	// own.
	Seq int
	// Question is a KindElicit window's.
	Question *Question `json:",omitempty"`

	// Elicited runs, in the process that asked, with a KindElicit
	// window's answer (once; closing the window answers cancel).
	Elicited func(Answer) `json:"-"`

	// Answered runs, in the process that asked, when a KindConfirm
	// question is answered yes.
	Answered func() `json:"-"`
}

// Kind is a kind of window.
type Kind string

// The kinds of window.
const (
	KindCreate        Kind = "create"
	KindDelete        Kind = "delete"
	KindAddProject    Kind = "add-project"
	KindRemoveProject Kind = "remove-project"
	KindSettings      Kind = "settings"
	KindAgentURL      Kind = "agent-url"
	KindError         Kind = "error"
	KindConfirm       Kind = "confirm"
	KindReview        Kind = "review"
	KindMerge         Kind = "merge"
	KindElicit        Kind = "elicit"
)

// Key names the window: one of each key is open at a time, and a second
// Open of it brings the first forward.
func (s Spec) Key() string {
	k := string(s.Kind)
	switch s.Kind {
	case KindDelete, KindReview, KindMerge:
		return k + ":" + s.Workspace.Path
	case KindRemoveProject:
		return k + ":" + s.Project.Path
	case KindAgentURL:
		return k + ":" + s.Path
	case KindConfirm:
		return k + ":" + s.Title
	case KindElicit:
		// An agent's question is one window however often it is opened.
		if s.Question != nil && s.Question.Request != "" {
			return k + ":" + s.Question.Request
		}
		return k + ":" + strconv.Itoa(s.Seq)
	case KindError:
		return k + ":" + strconv.Itoa(s.Seq)
	}
	return k
}

// Open opens the window s asks for, or brings its open one forward.
func (u *UI) Open(s Spec) {
	switch s.Kind {
	case KindCreate:
		u.openCreate(s.Path)
	case KindDelete:
		u.openDelete(s.Workspace)
	case KindAddProject:
		u.openAddProject()
	case KindRemoveProject:
		u.openRemoveProject(s.Project)
	case KindSettings:
		u.openSettings()
	case KindAgentURL:
		u.showAgentURL(s)
	case KindError:
		u.showMessage(s)
	case KindConfirm:
		u.confirm(s.Title, s.Message, s.Action, s.Answered)
	case KindReview:
		u.openReview(s.Workspace)
	case KindMerge:
		u.openMerge(s.Workspace)
	case KindElicit:
		if s.Question != nil {
			u.elicit(s)
		}
	default:
		u.log.Warn("unknown window", slog.String("kind", string(s.Kind)))
	}
}
