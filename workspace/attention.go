package workspace

import (
	"reflect"
	"slices"
	"strings"
)

// The kinds of PendingRequest.
const (
	RequestPermission = "permission"
	RequestQuestion   = "question"
)

// The replies to a permission request (Reply.Permission), opencode's words.
const (
	AllowOnce   = "once"
	AllowAlways = "always"
	RejectOnce  = "reject"
)

// PendingRequest is a permission request or a question that an agent
// waits on: its turn goes on only once someone answers.
type PendingRequest struct {
	// ID is opencode's ID of the request ("per…" or "que…").
	ID string `json:"id"`
	// SessionID is the session that asks (a subagent's, possibly).
	SessionID string `json:"sessionId"`
	// Kind is RequestPermission or RequestQuestion.
	Kind string `json:"kind"`
	// Tool is what a permission is for, in opencode's words ("bash",
	// "edit", "webfetch", "external_directory", …); "question" for a
	// question.
	Tool string `json:"tool"`
	// Summary is one line for a person: the command, the path or the URL
	// a permission is for, or a question's text.
	Summary string `json:"summary"`
	// Patterns are what a permission covers (commands, paths), as opencode
	// matches them; "always" allows Always from then on.
	Patterns []string `json:"patterns,omitempty"`
	Always   []string `json:"always,omitempty"`
	// Questions are a question request's questions, answered together.
	Questions []PendingQuestion `json:"questions,omitempty"`
	// Parent, while set, is the workspace whose agent was asked first
	// (escalation parent-first; see Escalator): the user is told of the
	// request only once it is empty again, if it is still pending.
	Parent string `json:"parent,omitempty"`
}

// PendingQuestion is one question of a question request.
type PendingQuestion struct {
	// Header is a short label; Text the question.
	Header string `json:"header"`
	Text   string `json:"text"`
	// Options are the labels to choose from, Descriptions their
	// explanations (same order).
	Options      []string `json:"options,omitempty"`
	Descriptions []string `json:"descriptions,omitempty"`
	// Multiple allows more than one option; Custom an answer of one's own
	// words.
	Multiple bool `json:"multiple,omitempty"`
	Custom   bool `json:"custom,omitempty"`
}

// Reply answers a PendingRequest. For a permission, Permission is
// AllowOnce, AllowAlways or RejectOnce, and Message (optional, with
// RejectOnce) tells the agent why. For a question, either Answers holds
// one answer per question, each the chosen labels (or one's own words
// where the question allows them), or Reject dismisses the question.
type Reply struct {
	Permission string     `json:"permission,omitempty"`
	Message    string     `json:"message,omitempty"`
	Answers    [][]string `json:"answers,omitempty"`
	Reject     bool       `json:"reject,omitempty"`
}

// maxSummary bounds a request's Summary, in runes.
const maxSummary = 200

// Summarize returns s on one line, at most maxSummary runes long.
func Summarize(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxSummary {
		s = string(r[:maxSummary-1]) + "…"
	}
	return s
}

// Check reports whether r is a valid reply to req, as an *Error with
// CodeInvalidInput saying what is wrong.
func (r Reply) Check(req PendingRequest) error {
	switch req.Kind {
	case RequestPermission:
		if r.Answers != nil || r.Reject {
			return Errorf(CodeInvalidInput, "request %s is a permission request: reply with permission \"once\", \"always\" or \"reject\", not answers", req.ID)
		}
		if r.Permission != AllowOnce && r.Permission != AllowAlways && r.Permission != RejectOnce {
			return Errorf(CodeInvalidInput, "request %s is a permission request: permission must be \"once\", \"always\" or \"reject\", not %q", req.ID, r.Permission)
		}
		if r.Message != "" && r.Permission != RejectOnce {
			return Errorf(CodeInvalidInput, "a message goes only with the permission \"reject\"")
		}
		return nil
	case RequestQuestion:
		if r.Permission != "" || r.Message != "" {
			return Errorf(CodeInvalidInput, "request %s is a question: reply with answers or reject, not a permission", req.ID)
		}
		if r.Reject {
			if r.Answers != nil {
				return Errorf(CodeInvalidInput, "reply to question %s with answers or reject it, not both", req.ID)
			}
			return nil
		}
		return r.checkAnswers(req)
	}
	return Errorf(CodeInvalidInput, "request %s is of an unknown kind %q", req.ID, req.Kind)
}

// checkAnswers checks the answers to a question request: one per
// question, each with at least one choice, one only unless the question
// allows several, and only its options unless it allows one's own words.
func (r Reply) checkAnswers(req PendingRequest) error {
	if len(r.Answers) != len(req.Questions) {
		return Errorf(CodeInvalidInput, "question %s has %d question(s); give one answer for each, not %d", req.ID, len(req.Questions), len(r.Answers))
	}
	for i, a := range r.Answers {
		q := req.Questions[i]
		if len(a) == 0 {
			return Errorf(CodeInvalidInput, "answer %d of question %s is empty; choose an option or reject the question", i+1, req.ID)
		}
		if len(a) > 1 && !q.Multiple {
			return Errorf(CodeInvalidInput, "question %d of %s allows one choice, not %d", i+1, req.ID, len(a))
		}
		for _, c := range a {
			if strings.TrimSpace(c) == "" {
				return Errorf(CodeInvalidInput, "answer %d of question %s has an empty choice", i+1, req.ID)
			}
			if !q.Custom && !slices.Contains(q.Options, c) {
				return Errorf(CodeInvalidInput, "question %d of %s allows only its options (%s), not %q", i+1, req.ID, strings.Join(q.Options, ", "), c)
			}
		}
	}
	return nil
}

// Equal reports whether a and b say the same. A status with requests
// cannot be compared with ==; reflect keeps Equal right whatever fields
// AgentStatus gains.
func (a AgentStatus) Equal(b AgentStatus) bool { return reflect.DeepEqual(a, b) }

// Equal reports whether a and b say the same (see AgentStatus.Equal).
func (a Status) Equal(b Status) bool { return reflect.DeepEqual(a, b) }
