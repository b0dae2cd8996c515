package main

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

type request struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
}

type state struct {
	mu        sync.Mutex
	heartbeat time.Duration
	healthy   bool
	mcp       *mcpLink
	// status maps sessions to their status as opencode gives it, e.g.
	// {"type":"retry","attempt":3,"message":"…","next":…}; idle ones are
	// absent.
	status    map[string]json.RawMessage
	sessions  map[string]*session
	clock     int64 // the sessions' time, one tick per change
	perms     map[string]request
	questions map[string]request
	streams   map[chan []byte]bool
	drop      chan struct{}
	seq       int
	// sessionPosts counts POST /session, failSessions is how many of the
	// first ones fail (FAKEOC_FAIL_SESSIONS).
	sessionPosts, failSessions int
	// prompts are the prompts taken, in order.
	prompts []prompt
	dir     string // where it runs: its sessions' directory
	// replies are the assistant messages of message.updated events: the
	// info of each one's last event, by session and message ID.
	replies map[string]map[string]json.RawMessage
}

// session is one of the fake's sessions.
type session struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID,omitempty"`
	Directory string `json:"directory"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
	// Cost and Tokens are the totals the last session event carried.
	Cost   float64         `json:"cost,omitempty"`
	Tokens json.RawMessage `json:"tokens,omitempty"`
}

// prompt is a prompt taken by POST /session/{id}/prompt_async.
type prompt struct {
	Session string `json:"session"`
	Text    string `json:"text"`
	Agent   string `json:"agent,omitempty"`
	Model   string `json:"model,omitempty"`
}

// addSession adds (or updates) a session, as of now. Call with s.mu held.
func (s *state) addSession(id, parent, dir string) *session {
	s.clock++
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{ID: id, Directory: dir}
		ss.Time.Created = s.clock
		s.sessions[id] = ss
	}
	if parent != "" {
		ss.ParentID = parent
	}
	ss.Time.Updated = s.clock
	return ss
}

func newState() *state {
	return &state{
		status: map[string]json.RawMessage{}, sessions: map[string]*session{},
		perms: map[string]request{}, questions: map[string]request{},
		streams: map[chan []byte]bool{}, drop: make(chan struct{}), replies: map[string]map[string]json.RawMessage{},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// routes serves opencode's API, behind opencode's basic auth when
// OPENCODE_SERVER_PASSWORD is set, and the test controls, which are no
// part of opencode and need none.
func (s *state) routes() http.Handler {
	api := s.api()
	if pw := os.Getenv("OPENCODE_SERVER_PASSWORD"); pw != "" {
		user := cmp.Or(os.Getenv("OPENCODE_SERVER_USERNAME"), "opencode")
		api = requireAuth(api, user, pw)
	}
	mux := http.NewServeMux()
	s.controls(mux)
	mux.Handle("/", api)
	return mux
}

// requireAuth answers 401 to a request without the credentials user:pw,
// given as opencode 1.18 takes them: HTTP basic auth or the query
// parameter auth_token=<base64("user:pw")>.
func requireAuth(next http.Handler, user, pw string) http.Handler {
	want := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, basic := r.BasicAuth()
		token := r.URL.Query().Get("auth_token")
		if (basic && u == user && p == pw) || (token != "" && token == want) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="Secure Area"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
}

// api serves opencode's API.
func (s *state) api() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"healthy": s.healthy, "version": "fake"})
	})
	mux.HandleFunc("GET /mcp", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.mcp.report())
	})
	mux.HandleFunc("POST /mcp/{name}/connect", s.connectMCP)
	mux.HandleFunc("GET /session/status", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		writeJSON(w, s.status)
	})
	mux.HandleFunc("GET /session/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		id := r.PathValue("id")
		out := map[string]any{"id": id}
		if ss := s.sessions[id]; ss != nil && ss.ParentID != "" {
			out["parentID"] = ss.ParentID
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /session", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := []*session{}
		for _, ss := range s.sessions {
			out = append(out, ss)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /session/{id}/message", s.messages)
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sessionPosts++
		if s.sessionPosts <= s.failSessions {
			http.Error(w, "fake: failing session creation", http.StatusInternalServerError)
			return
		}
		writeJSON(w, s.addSession(fmt.Sprintf("ses_fake%03d", s.sessionPosts), "", s.dir))
	})
	mux.HandleFunc("POST /session/{id}/prompt_async", s.promptAsync)
	mux.HandleFunc("GET /permission", s.list(s.perms))
	mux.HandleFunc("GET /question", s.list(s.questions))
	mux.HandleFunc("GET /event", s.events)
	return mux
}

// connectMCP is POST /mcp/{name}/connect: it connects again and answers
// once it tried, as opencode does.
func (s *state) connectMCP(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("name") != "codehydra" || s.mcp.entry == nil {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"_tag": "McpServerNotFoundError"})
		return
	}
	s.mcp.mu.Lock()
	s.mcp.requests++
	s.mcp.mu.Unlock()
	s.mcp.connect()
	writeJSON(w, true)
}

// list serves the pending requests of m.
func (s *state) list(m map[string]request) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := []request{}
		for _, r := range m {
			out = append(out, r)
		}
		writeJSON(w, out)
	}
}

// controls adds the routes tests steer the fake with.
func (s *state) controls(mux *http.ServeMux) {
	mux.HandleFunc("POST /fake/emit", func(w http.ResponseWriter, r *http.Request) {
		var e struct {
			Type       string          `json:"type"`
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.apply(e.Type, e.Properties)
		if r.URL.Query().Get("silent") != "1" {
			s.broadcast(e.Type, e.Properties)
		}
		writeJSON(w, true)
	})
	mux.HandleFunc("GET /fake/clients", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		writeJSON(w, len(s.streams))
	})
	mux.HandleFunc("GET /fake/connect-requests", func(w http.ResponseWriter, _ *http.Request) {
		s.mcp.mu.Lock()
		defer s.mcp.mu.Unlock()
		writeJSON(w, s.mcp.requests)
	})
	mux.HandleFunc("GET /fake/prompts", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		writeJSON(w, append([]prompt{}, s.prompts...))
	})
	mux.HandleFunc("POST /fake/drop", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		close(s.drop)
		s.drop = make(chan struct{})
		s.mu.Unlock()
		writeJSON(w, true)
	})
}

// apply updates the fake's state the way opencode's would change.
func (s *state) apply(typ string, props json.RawMessage) {
	var p struct {
		ID        string          `json:"id"`
		SessionID string          `json:"sessionID"`
		RequestID string          `json:"requestID"`
		Status    json.RawMessage `json:"status"`
		Info      struct {
			ID        string `json:"id"`
			ParentID  string `json:"parentID"`
			Directory string `json:"directory"`
			Role      string `json:"role"`
			// The usage a session event carries, its time of update
			// too; both kept as sent.
			Cost   float64         `json:"cost"`
			Tokens json.RawMessage `json:"tokens"`
			Time   struct {
				Updated int64 `json:"updated"`
			} `json:"time"`
		} `json:"info"`
	}
	_ = json.Unmarshal(props, &p)
	var raw struct {
		Info json.RawMessage `json:"info"`
	}
	_ = json.Unmarshal(props, &raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch typ {
	case "session.created", "session.updated":
		ss := s.addSession(p.Info.ID, p.Info.ParentID, cmp.Or(p.Info.Directory, s.dir))
		ss.Cost, ss.Tokens = p.Info.Cost, p.Info.Tokens
		if p.Info.Time.Updated != 0 {
			ss.Time.Updated = p.Info.Time.Updated
		}
	case "message.updated":
		if p.Info.Role == "assistant" {
			if s.replies[p.SessionID] == nil {
				s.replies[p.SessionID] = map[string]json.RawMessage{}
			}
			s.replies[p.SessionID][p.Info.ID] = raw.Info
		}
	case "session.deleted":
		delete(s.status, p.SessionID)
	case "session.status":
		var st struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(p.Status, &st)
		if st.Type == "idle" {
			delete(s.status, p.SessionID)
		} else {
			s.status[p.SessionID] = p.Status
		}
	case "permission.asked":
		s.perms[p.ID] = request{ID: p.ID, SessionID: p.SessionID}
	case "permission.replied":
		delete(s.perms, p.RequestID)
	case "question.asked":
		s.questions[p.ID] = request{ID: p.ID, SessionID: p.SessionID}
	case "question.replied", "question.rejected":
		delete(s.questions, p.RequestID)
	}
}

// applyAll applies the events of FAKEOC_EVENTS.
func (s *state) applyAll(events string) error {
	if events == "" {
		return nil
	}
	var list []struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(events), &list); err != nil {
		return fmt.Errorf("FAKEOC_EVENTS: %w", err)
	}
	for _, e := range list {
		s.apply(e.Type, e.Properties)
	}
	return nil
}

// promptAsync is POST /session/{id}/prompt_async: it takes the prompt
// (runs nothing) and answers 204, as opencode does; a session it does not
// know is 404.
func (s *state) promptAsync(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
		Agent string `json:"agent"`
		Model struct {
			ProviderID string `json:"providerID"`
			ModelID    string `json:"modelID"`
		} `json:"model"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Parts) != 1 {
		http.Error(w, "fake: want one text part", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	if s.sessions[id] == nil {
		http.Error(w, "fake: no session "+id, http.StatusNotFound)
		return
	}
	s.addSession(id, "", "")
	p := prompt{Session: id, Text: body.Parts[0].Text, Agent: body.Agent}
	if body.Model.ProviderID != "" {
		p.Model = body.Model.ProviderID + "/" + body.Model.ModelID
	}
	s.prompts = append(s.prompts, p)
	w.WriteHeader(http.StatusNoContent)
}

// messages is GET /session/{id}/message: the prompts the session took, as
// user messages.
func (s *state) messages(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	}
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type info struct {
		Role  string `json:"role"`
		Agent string `json:"agent,omitempty"`
		Model model  `json:"model"`
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, p := range s.prompts {
		if p.Session != r.PathValue("id") {
			continue
		}
		provider, id, _ := strings.Cut(p.Model, "/")
		out = append(out, map[string]any{
			"info":  info{Role: "user", Agent: p.Agent, Model: model{provider, id}},
			"parts": []part{{"text", p.Text}},
		})
	}
	for _, info := range s.replies[r.PathValue("id")] {
		out = append(out, map[string]any{"info": info, "parts": []part{}})
	}
	writeJSON(w, out)
}

func (s *state) broadcast(typ string, props json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if len(props) == 0 {
		props = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("evt_fake%06d", s.seq), "type": typ, "properties": props})
	for c := range s.streams {
		select {
		case c <- b:
		default: // a stuck reader loses events, as with a real server
		}
	}
}

func (s *state) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "no streaming", http.StatusInternalServerError)
		return
	}
	c := make(chan []byte, 64)
	s.mu.Lock()
	s.streams[c] = true
	drop := s.drop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, c)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: {\"id\":\"evt_connected\",\"type\":\"server.connected\",\"properties\":{}}\n\n")
	flusher.Flush()
	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	for {
		select {
		case b := <-c:
			fmt.Fprintf(w, "data: %s\n\n", b)
		case <-tick.C:
			fmt.Fprintf(w, "data: {\"id\":\"evt_hb\",\"type\":\"server.heartbeat\",\"properties\":{}}\n\n")
		case <-drop:
			return
		case <-r.Context().Done():
			return
		}
		flusher.Flush()
	}
}
