package opencode

// Reads of an agent's conversations through its server's API, for the
// MCP tools that follow agents (workspace_list, workspace_get_agent_session):
// which session is current, and what the agent last said in it.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// sessionReadTimeout bounds each read of an agent's sessions: a list of
// agents must not wait on one that hangs.
const sessionReadTimeout = 3 * time.Second

// replyMessages is how many of a session's newest messages are read to
// find the last reply: a turn of tool calls adds a few messages, and a
// reply further back than this is not "the last" any more.
const replyMessages = 30

// MaxReplyBytes caps the text of a last reply (LastReply).
const MaxReplyBytes = 4 << 10

// ErrNoAgent is returned when the workspace's agent server is not ready.
var ErrNoAgent = errors.New("the workspace's agent is not running")

// session is one entry of GET /session (opencode 1.18).
type session struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
}

// message is one entry of GET /session/<id>/message.
type message struct {
	Info struct {
		Role string `json:"role"`
		Time struct {
			Created int64 `json:"created"`
		} `json:"time"`
	} `json:"info"`
	Parts []struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		Synthetic bool   `json:"synthetic"`
	} `json:"parts"`
}

// sessionsOf is the API of the workspace's ready agent server, for the
// sessions of that workspace: opencode keys its sessions by project (the
// repository), so every worktree's server lists its siblings' too.
type sessionsOf struct {
	agentAPI
	dir string
}

// api is the API of the workspace's ready agent server.
func (s *Supervisor) api(path string) (sessionsOf, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[filepath.Clean(path)]
	if a == nil || a.port == 0 || a.password == "" {
		return sessionsOf{}, ErrNoAgent
	}
	return sessionsOf{newAgentAPI(s.opts.HTTPClient, a.port, a.password), filepath.Clean(a.ws.Path)}, nil
}

// CurrentSession is the ID of the workspace agent's current session: the
// top-level one (not a subagent's) of its workspace updated last; "" when
// it has none.
func (s *Supervisor) CurrentSession(ctx context.Context, path string) (string, error) {
	api, err := s.api(path)
	if err != nil {
		return "", err
	}
	return api.currentSession(ctx)
}

func (c sessionsOf) currentSession(ctx context.Context) (string, error) {
	var list []session
	if err := c.getJSON(ctx, "/session", sessionReadTimeout, &list); err != nil {
		return "", fmt.Errorf("list the agent's sessions: %w", err)
	}
	var cur *session
	for i := range list {
		if list[i].ParentID != "" || filepath.Clean(list[i].Directory) != c.dir {
			continue
		}
		if cur == nil || list[i].Time.Updated > cur.Time.Updated {
			cur = &list[i]
		}
	}
	if cur == nil {
		return "", nil
	}
	return cur.ID, nil
}

// LastReply is the text of what the workspace's agent last said in its
// current session, its first MaxReplyBytes when longer (truncated), ""
// when it has said nothing yet.
func (s *Supervisor) LastReply(ctx context.Context, path string) (text string, truncated bool, err error) {
	api, err := s.api(path)
	if err != nil {
		return "", false, err
	}
	id, err := api.currentSession(ctx)
	if err != nil || id == "" {
		return "", false, err
	}
	var msgs []message
	q := fmt.Sprintf("/session/%s/message?limit=%d", url.PathEscape(id), replyMessages)
	if err := api.getJSON(ctx, q, sessionReadTimeout, &msgs); err != nil {
		return "", false, fmt.Errorf("read the agent's messages: %w", err)
	}
	text = lastReplyText(msgs)
	if len(text) > MaxReplyBytes {
		return cutUTF8(text, MaxReplyBytes), true, nil
	}
	return text, false, nil
}

// lastReplyText is the text of the newest assistant message with text
// (a message of tool calls only says nothing).
func lastReplyText(msgs []message) string {
	best, found := int64(-1), ""
	for _, m := range msgs {
		if m.Info.Role != "assistant" || m.Info.Time.Created < best {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts {
			if p.Type == "text" && !p.Synthetic && p.Text != "" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(p.Text)
			}
		}
		if b.Len() > 0 {
			best, found = m.Info.Time.Created, b.String()
		}
	}
	return found
}

// cutUTF8 is the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
