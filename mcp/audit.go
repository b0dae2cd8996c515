package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// auditEntry is one line of audit.jsonl. It names who called (as the
// token proves: "user" or the token's workspace), what, on which workspace
// and how it ended — never the token, environment values or argument
// values, which may be secrets. Args lists argument names only.
type auditEntry struct {
	Time       time.Time `json:"time"`
	Caller     string    `json:"caller"`
	Workspace  string    `json:"workspace"`
	Tool       string    `json:"tool"`
	Outcome    string    `json:"outcome"` // "ok" or an error code
	DurationMs int64     `json:"durationMs"`
	Args       []string  `json:"args,omitempty"`
}

// maxAuditWorkspace bounds how much of an unresolved X-Workspace-Path header
// goes into the audit log: enough to recognise it, not enough to let a
// client bloat the file.
const maxAuditWorkspace = 256

// maxAuditTool bounds a tool name in the audit log.
const maxAuditTool = 64

// auditLog appends entries to a JSON-lines file (0600). A nil *auditLog
// records nothing.
type auditLog struct {
	mu sync.Mutex
	f  *os.File
}

func openAuditLog(path string) (*auditLog, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	// O_CREATE's mode is filtered by the umask and ignored for an existing
	// file; make sure the log is private either way.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("restrict audit log: %w", err)
	}
	return &auditLog{f: f}, nil
}

// record appends e as one line. Each line is written with a single write on
// an O_APPEND file, so lines never interleave.
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
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode audit entry: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil // closed during shutdown
	}
	if _, err := a.f.Write(line); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

func (a *auditLog) close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// argNames lists the argument names of a call, for the audit log: names
// only, never values. Bounded, since a client chooses them.
func argNames(raw json.RawMessage) []string {
	const maxNames, maxLen = 16, 64
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
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
