package opencode

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"codehydra/workspace"
)

// A pending request as opencode 1.18 describes it, in GET /permission,
// GET /question and the events permission.asked and question.asked; the
// ".v2." events name a permission's fields action, resources and save.
type wireRequest struct {
	ID         string         `json:"id"`
	SessionID  string         `json:"sessionID"`
	Permission string         `json:"permission"`
	Action     string         `json:"action"`
	Patterns   []string       `json:"patterns"`
	Resources  []string       `json:"resources"`
	Always     []string       `json:"always"`
	Save       []string       `json:"save"`
	Metadata   map[string]any `json:"metadata"`
	Questions  []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		Multiple bool `json:"multiple"`
		// Custom is true unless opencode says false: its question tool
		// lets the user type an answer by default.
		Custom *bool `json:"custom"`
	} `json:"questions"`
}

// pending is r as a workspace.PendingRequest of kind (RequestPermission or
// RequestQuestion); ok=false when r lacks its ID or session.
func (r wireRequest) pending(kind string) (req workspace.PendingRequest, ok bool) {
	if r.ID == "" || r.SessionID == "" {
		return workspace.PendingRequest{}, false
	}
	req = workspace.PendingRequest{ID: r.ID, SessionID: r.SessionID, Kind: kind}
	if kind == workspace.RequestQuestion {
		req.Tool = "question"
		for _, q := range r.Questions {
			pq := workspace.PendingQuestion{Header: q.Header, Text: q.Question, Multiple: q.Multiple, Custom: q.Custom == nil || *q.Custom}
			for _, o := range q.Options {
				pq.Options = append(pq.Options, o.Label)
				pq.Descriptions = append(pq.Descriptions, o.Description)
			}
			req.Questions = append(req.Questions, pq)
		}
		if len(req.Questions) > 0 {
			req.Summary = workspace.Summarize(req.Questions[0].Text)
			if n := len(req.Questions); n > 1 {
				req.Summary = workspace.Summarize(fmt.Sprintf("%s (and %d more)", req.Questions[0].Text, n-1))
			}
		}
		return req, true
	}
	req.Tool = cmp.Or(r.Permission, r.Action)
	req.Patterns = orSlice(r.Patterns, r.Resources)
	req.Always = orSlice(r.Always, r.Save)
	req.Summary = workspace.Summarize(permissionSummary(r.Metadata, req.Patterns))
	if req.Summary == "" {
		req.Summary = req.Tool
	}
	return req, true
}

// permissionSummary is what a permission is for, in one line: what its
// tool says of it (a command, a file, a URL) or else its patterns.
func permissionSummary(meta map[string]any, patterns []string) string {
	for _, k := range []string{"command", "filepath", "filePath", "path", "url"} {
		if s, ok := meta[k].(string); ok && s != "" {
			return s
		}
	}
	return strings.Join(patterns, " ")
}

// orSlice is a unless it is empty, else b; nil for two empty ones.
func orSlice(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	if len(b) > 0 {
		return b
	}
	return nil
}

// answerTimeout bounds one reply to the agent's server.
const answerTimeout = 10 * time.Second

// Answer replies r to the pending request requestID of the agent of the
// workspace at path, through opencode's own API: POST
// /permission/{id}/reply, /question/{id}/reply or /question/{id}/reject.
// The agent's turn goes on, and the request leaves AgentStatus.Requests
// when opencode says it was answered. Errors are *workspace.Error: an
// agent that is not ready or a request that is not (or no longer)
// pending is a conflict, a reply that does not fit the request invalid
// input.
func (s *Supervisor) Answer(ctx context.Context, path, requestID string, r workspace.Reply) error {
	s.mu.Lock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.state != workspace.AgentStateReady || a.port == 0 {
		s.mu.Unlock()
		return workspace.Errorf(workspace.CodeConflict, "the agent of workspace %s is not running; it has no request to answer", path)
	}
	i := slices.IndexFunc(a.summary.Requests, func(q workspace.PendingRequest) bool { return q.ID == requestID })
	var req workspace.PendingRequest
	if i >= 0 {
		req = a.summary.Requests[i]
	}
	api := newAgentAPI(s.opts.HTTPClient, a.port, a.password)
	s.mu.Unlock()
	if i < 0 {
		return workspace.Errorf(workspace.CodeConflict, "the agent of workspace %s has no pending request %q; it may have been answered already", path, requestID)
	}
	if err := r.Check(req); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	id := url.PathEscape(req.ID)
	var err error
	switch {
	case req.Kind == workspace.RequestPermission:
		body := map[string]any{"reply": r.Permission}
		if r.Message != "" {
			body["message"] = r.Message
		}
		err = api.postJSON(ctx, "/permission/"+id+"/reply", body, nil)
	case r.Reject:
		err = api.postJSON(ctx, "/question/"+id+"/reject", map[string]any{}, nil)
	default:
		err = api.postJSON(ctx, "/question/"+id+"/reply", map[string]any{"answers": r.Answers}, nil)
	}
	if err != nil {
		var refused *answerError
		if errors.As(err, &refused) {
			return &workspace.Error{Code: workspace.CodeConflict, Message: fmt.Sprintf("the agent of workspace %s did not take the answer to %s", path, req.ID), Err: err}
		}
		return &workspace.Error{Code: workspace.CodeInternal, Message: fmt.Sprintf("cannot reach the agent of workspace %s to answer %s", path, req.ID), Err: err}
	}
	return nil
}

// Tell hands text to the current session of the agent of the workspace at
// path as a user message (a new session when it has none), at once,
// without the records and retries of first prompts and reviews: for
// notices whose loss costs nothing but a wait (the escalation of a
// child's request to its parent, which the user hears of anyway).
func (s *Supervisor) Tell(ctx context.Context, path, text string) error {
	port, password, ok := s.OpencodeServer(path)
	if !ok {
		return workspace.Errorf(workspace.CodeConflict, "the agent of workspace %s is not running", path)
	}
	_, _, err := newAgentAPI(s.opts.HTTPClient, port, password).sendToCurrent(ctx, filepath.Clean(path), workspace.FirstPrompt{Prompt: text})
	return err
}
