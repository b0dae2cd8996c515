package workspace

import "time"

// A review of a workspace's changes (issue 23): comments on files and
// lines plus a summary, handed to the workspace's agent as one prompt.

// ReviewComment is a comment on a file, or on lines of it.
type ReviewComment struct {
	// File is a path relative to the workspace, as Diff.Files names it.
	File string `json:"file"`
	// Line and EndLine are the lines (from 1, of the file in the
	// workspace) the comment is about; 0 for the whole file. EndLine 0
	// means Line alone.
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"endLine,omitempty"`
	Text    string `json:"text"`
}

// Review is what a reviewer sends to a workspace's agent.
type Review struct {
	Summary  string          `json:"summary,omitempty"`
	Comments []ReviewComment `json:"comments,omitempty"`
	// From says who reviews: "user", or the path of the parent workspace
	// whose agent sent it. Set by CodeHydra, not by the reviewer.
	From string `json:"from,omitempty"`
}

// ReviewDelivery is what became of one review sent to an agent: delivered
// exactly once, as a first prompt is.
type ReviewDelivery struct {
	ID        string        `json:"id"`
	State     DeliveryState `json:"state"`
	SessionID string        `json:"sessionId,omitempty"`
	Error     string        `json:"error,omitempty"`
	From      string        `json:"from,omitempty"`
	Comments  int           `json:"comments"`
	Sent      time.Time     `json:"sent"`
}
