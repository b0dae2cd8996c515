package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"codehydra/internal/rotate"
	"codehydra/tasks"
)

// auditEntry is one line of audit.jsonl. It names who called (as the
// token proves: "user" or the token's workspace), what, on which workspace
// and how it ended — never the token, environment values or argument
// values, which may be secrets. Args lists argument names only.
type auditEntry struct {
	Time      time.Time `json:"time"`
	Caller    string    `json:"caller"`
	Workspace string    `json:"workspace"`
	Tool      string    `json:"tool"`
	// Server names the gateway server of a "<server>__<tool>" tool.
	Server     string   `json:"server,omitempty"`
	Outcome    string   `json:"outcome"` // "ok" or an error code
	DurationMs int64    `json:"durationMs"`
	Args       []string `json:"args,omitempty"`
	// ArgHashes are, for workspace_run_task, a hash of each of the task's
	// arguments ("sha256:" and the first 16 hex digits): enough to tell
	// which run had which arguments, without their values.
	ArgHashes []string `json:"argHashes,omitempty"`
	// Review is, for workspace_send_review, how much the review held: its
	// comments and bytes of text, never the text.
	Review *reviewSize `json:"review,omitempty"`
}

// reviewSize is how much a review held.
type reviewSize struct {
	Comments int `json:"comments"`
	Bytes    int `json:"bytes"`
}

// maxAuditWorkspace bounds how much of an unresolved X-Workspace-Path header
// goes into the audit log: enough to recognise it, not enough to let a
// client bloat the file.
const maxAuditWorkspace = 256

// maxAuditTool bounds a tool name in the audit log.
const maxAuditTool = 64

// auditLog appends entries to a JSON-lines file (0600) that rotates by
// size (DefaultAuditMaxBytes, or what SetAuditRotation says). A nil
// *auditLog records nothing.
type auditLog struct {
	path string

	mu sync.Mutex // guards w against SetAuditRotation's swap
	w  *rotate.File

	// lines are the buffers the lines are encoded into, reused: a line
	// is written (synchronously) before its buffer goes back.
	lines sync.Pool
}

func openAuditLog(path string) (*auditLog, error) {
	if path == "" {
		return nil, nil
	}
	w, err := rotate.Open(path, rotate.Options{})
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &auditLog{path: path, w: w}, nil
}

// SetAuditRotation sets the size at which audit.jsonl is moved to
// audit.jsonl.1 (keeping rotate.DefaultKeep older files); 0 means
// rotate.DefaultMaxBytes. Call it before Serve; a server without an audit
// log ignores it.
func (s *Server) SetAuditRotation(maxBytes int64) error {
	a := s.audit
	if a == nil {
		return nil
	}
	w, err := rotate.Open(a.path, rotate.Options{MaxBytes: maxBytes})
	if err != nil {
		return fmt.Errorf("reopen audit log: %w", err)
	}
	a.mu.Lock()
	old := a.w
	a.w = w
	a.mu.Unlock()
	return old.Close()
}

// record appends e as one line. Each line is one Write of the rotating
// file, which never splits or interleaves them.
func (a *auditLog) record(e auditEntry) error {
	if a == nil {
		return nil
	}
	if len(e.Workspace) > maxAuditWorkspace {
		e.Workspace = e.Workspace[:maxAuditWorkspace] + "…"
	}
	if len(e.Tool) > maxAuditTool { // an unknown tool's name is the client's choice
		e.Tool = e.Tool[:maxAuditTool] + "…"
	}
	line, _ := a.lines.Get().(*bytes.Buffer)
	if line == nil {
		line = new(bytes.Buffer)
	}
	defer a.lines.Put(line)
	line.Reset()
	// Encode writes what json.Marshal returns, and the newline.
	if err := json.NewEncoder(line).Encode(e); err != nil {
		return fmt.Errorf("encode audit entry: %w", err)
	}
	a.mu.Lock()
	w := a.w
	a.mu.Unlock()
	if _, err := w.Write(line.Bytes()); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

// close closes the file; lines recorded afterwards (by calls that end
// during shutdown) are dropped.
func (a *auditLog) close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.w.Close()
}

// argNames lists the argument names of a call, for the audit log: names
// only, never values. Bounded, since a client chooses them.
func argNames(raw json.RawMessage) []string {
	const maxNames, maxLen = 16, 64
	var m map[string]json.RawMessage
	if isEmptyArgs(raw) || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		if len(k) > maxLen {
			k = k[:maxLen]
		}
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) > maxNames {
		names = names[:maxNames]
	}
	return names
}

// reviewSizeOf is, for a workspace_send_review call, how many comments
// and bytes of text (the summary's and the comments') its review held; nil
// for any other call.
func reviewSizeOf(tool string, raw json.RawMessage) *reviewSize {
	if tool != ToolSendReview || isEmptyArgs(raw) {
		return nil
	}
	var in reviewInput
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	size := &reviewSize{Comments: len(in.Comments), Bytes: len(in.Summary)}
	for _, c := range in.Comments {
		size.Bytes += len(c.Text)
	}
	return size
}

// taskArgHashes hashes the task arguments of a workspace_run_task call
// for its audit line (see auditEntry.ArgHashes); nil for any other call.
func taskArgHashes(tool string, raw json.RawMessage) []string {
	if tool != ToolRunTask || isEmptyArgs(raw) {
		return nil
	}
	var in struct {
		Args []string `json:"args"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	out := make([]string, 0, min(len(in.Args), tasks.MaxArgs))
	for _, a := range in.Args[:min(len(in.Args), tasks.MaxArgs)] {
		sum := sha256.Sum256([]byte(a))
		out = append(out, "sha256:"+hex.EncodeToString(sum[:8]))
	}
	return out
}
