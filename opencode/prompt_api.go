package opencode

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"codehydra/workspace"
)

// postJSON sends body to path and decodes a JSON answer into out (nil:
// none expected).
func (c agentAPI) postJSON(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(serverUser, c.password)
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &answerError{fmt.Sprintf("POST %s: %s %s", path, resp.Status, bytes.TrimSpace(msg))}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	} else {
		err = json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(out)
	}
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	return nil
}

// answerError is a request that the agent's server answered with an
// error: it did not take it.
type answerError struct{ msg string }

func (e *answerError) Error() string { return e.msg }

// sendPrompt hands p to the agent's session id, or to a new session when
// id is "", with opencode's prompt_async, which answers once the prompt is
// accepted, not when the turn ends. sent reports whether the prompt may
// have reached the server: false only when nothing but a session was
// asked for, or the server refused the prompt outright.
func (c agentAPI) sendPrompt(ctx context.Context, p workspace.FirstPrompt, id string) (sessionID string, sent bool, err error) {
	if id == "" {
		var sess struct {
			ID string `json:"id"`
		}
		if err := c.postJSON(ctx, "/session", map[string]any{}, &sess); err != nil {
			return "", false, fmt.Errorf("create a session for the prompt: %w", err)
		}
		id = sess.ID
	}
	if id == "" || strings.ContainsAny(id, "/?#") {
		return "", false, fmt.Errorf("hand the prompt to the agent: opencode named the session %q", id)
	}
	body := map[string]any{"parts": []any{map[string]any{"type": "text", "text": p.Prompt}}}
	if p.Agent != "" {
		body["agent"] = p.Agent
	}
	if provider, model, ok := strings.Cut(p.Model, "/"); ok {
		body["model"] = map[string]any{"providerID": provider, "modelID": model}
	}
	err = c.postJSON(ctx, "/session/"+id+"/prompt_async", body, nil)
	if err != nil {
		var refused *answerError
		return id, !errors.As(err, &refused), fmt.Errorf("hand the prompt to the agent: %w", err)
	}
	return id, true, nil
}

// sendToCurrent hands p to the current session of the agent of the
// workspace at dir (see currentSession), with the agent and model of the
// last user message there, so that the conversation goes on as it was; to
// a new session when the agent has none.
func (c agentAPI) sendToCurrent(ctx context.Context, dir string, p workspace.FirstPrompt) (sessionID string, sent bool, err error) {
	id, err := sessionsOf{c, dir}.currentSession(ctx)
	if err != nil {
		return "", false, fmt.Errorf("find the agent's current session: %w", err)
	}
	if id != "" && !strings.ContainsAny(id, "/?#") {
		p.Agent, p.Model = c.lastUserTurn(ctx, id)
	}
	return c.sendPrompt(ctx, p, id)
}

// modelLookupTimeout bounds the look-up of a caller's current model.
const modelLookupTimeout = 5 * time.Second

// RecentModel is the model ("provider/model") of the most recent user
// message in the sessions of the workspace's agent at path, "" if its
// agent is not ready or has none. workspace_create uses it so that the
// agents an agent starts run on the model it runs on.
func (s *Supervisor) RecentModel(ctx context.Context, path string) string {
	port, password, ok := s.OpencodeServer(filepath.Clean(path))
	if !ok {
		return ""
	}
	return newAgentAPI(s.opts.HTTPClient, port, password).recentModel(ctx)
}

// recentModel reads the sessions, newest first (subagents' left out: their
// prompts are the agent's, not the user's), and returns the model of the
// last user message of the first that has one.
func (c agentAPI) recentModel(ctx context.Context) string {
	var sessions []sessionListing
	if c.getJSON(ctx, "/session", modelLookupTimeout, &sessions) != nil {
		return ""
	}
	slices.SortFunc(sessions, func(a, b sessionListing) int { return cmp.Compare(b.Time.Updated, a.Time.Updated) })
	for i, sess := range sessions {
		if i >= 5 {
			break
		}
		if sess.ParentID != "" || sess.ID == "" || strings.ContainsAny(sess.ID, "/?#") {
			continue
		}
		if _, m := c.lastUserTurn(ctx, sess.ID); m != "" {
			return m
		}
	}
	return ""
}

// sessionListing is what recentModel reads of a session.
type sessionListing struct {
	ID       string `json:"id"`
	ParentID string `json:"parentID"`
	Time     struct {
		Updated int64 `json:"updated"`
	} `json:"time"`
}

// lastUserTurn is the agent and the model ("provider/model") of the last
// user message of a session that names a model; "" for none.
func (c agentAPI) lastUserTurn(ctx context.Context, id string) (agent, model string) {
	var msgs []struct {
		Info struct {
			Role  string `json:"role"`
			Agent string `json:"agent"`
			Model struct {
				ProviderID string `json:"providerID"`
				ModelID    string `json:"modelID"`
			} `json:"model"`
		} `json:"info"`
	}
	if c.getJSON(ctx, "/session/"+id+"/message", modelLookupTimeout, &msgs) != nil {
		return "", ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].Info
		if m.Role == "user" && m.Model.ProviderID != "" && m.Model.ModelID != "" {
			return m.Agent, m.Model.ProviderID + "/" + m.Model.ModelID
		}
	}
	return "", ""
}
