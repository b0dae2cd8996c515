// Command fakeopencode imitates `opencode serve` for the supervisor's
// tests. Tests build it as a binary named "opencode" (so that orphan
// reaping recognises it) and steer it with environment variables:
//
//	FAKEOC_ENV_FILE      write {"env","cwd","args"} as JSON to this file at start
//	FAKEOC_STARTS_FILE   append one line per start (unix nanoseconds)
//	FAKEOC_MODE          "" (normal), "hang" (never listen), "exit" (exit 3 at
//	                     once), "crash-after=<duration>" (exit 4 that long
//	                     after listening), "unhealthy", "slow=<duration>"
//	                     (wait before listening)
//	FAKEOC_EXIT_STARTS   exit 5 at once on the first N starts (counted in
//	                     FAKEOC_STARTS_FILE), behave normally afterwards
//	FAKEOC_MCP           codehydra MCP status: "connected" (default), "failed",
//	                     "failed-until-connect", "missing"
//	FAKEOC_FAIL_PORT     on this --port, fail like opencode 1.18 does when the
//	                     port is taken
//	FAKEOC_GRANDCHILD_PIDFILE  start a child that sleeps (in the same process
//	                     group, sharing stdout) and write its pid here
//	FAKEOC_IGNORE_TERM   "1": ignore SIGTERM (so only SIGKILL ends it)
//	FAKEOC_HEARTBEAT     event stream heartbeat interval (default 10s)
//
// Besides opencode's GET /global/health, /mcp, /event, /session/status,
// /permission, /question and /session/{id} and POST
// /mcp/codehydra/connect, it serves test controls: POST /fake/emit (an
// event {"type","properties"} to apply to its state and broadcast;
// ?silent=1 applies it without broadcasting, like an event missed while
// disconnected), POST /fake/drop (close every event stream) and GET
// /fake/clients (how many event streams are open).
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("FAKEOC_ROLE") == "grandchild" {
		signal.Ignore(syscall.SIGHUP)
		select {}
	}
	// run returns only on failure; a healthy fake serves until killed.
	err := run()
	fmt.Fprintln(os.Stderr, "fake opencode:", err)
	os.Exit(2)
}

func run() error {
	if os.Getenv("FAKEOC_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	port := -1
	host := "127.0.0.1"
	args := os.Args[1:]
	if len(args) == 0 || args[0] != "serve" {
		return fmt.Errorf("usage: opencode serve --hostname H --port P")
	}
	for i := 1; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--port":
			p, err := strconv.Atoi(args[i+1])
			if err != nil {
				return fmt.Errorf("bad --port: %w", err)
			}
			port = p
		case "--hostname":
			host = args[i+1]
		}
	}
	if port < 0 {
		return fmt.Errorf("no --port")
	}
	if f := os.Getenv("FAKEOC_ENV_FILE"); f != "" {
		wd, _ := os.Getwd()
		b, _ := json.Marshal(map[string]any{"env": os.Environ(), "cwd": wd, "args": os.Args})
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return err
		}
	}
	starts := 0
	if f := os.Getenv("FAKEOC_STARTS_FILE"); f != "" {
		fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(fh, time.Now().UnixNano())
		fh.Close()
		b, _ := os.ReadFile(f)
		starts = strings.Count(string(b), "\n")
	}
	if n, _ := strconv.Atoi(os.Getenv("FAKEOC_EXIT_STARTS")); starts > 0 && starts <= n {
		fmt.Println("fake opencode: exiting at start", starts)
		os.Exit(5)
	}
	if pf := os.Getenv("FAKEOC_GRANDCHILD_PIDFILE"); pf != "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		c := exec.Command(self)
		c.Env = append(os.Environ(), "FAKEOC_ROLE=grandchild")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(pf, []byte(strconv.Itoa(c.Process.Pid)), 0o600); err != nil {
			return err
		}
	}

	mode := os.Getenv("FAKEOC_MODE")
	fmt.Println("Warning: OPENCODE_SERVER_PASSWORD is not set; server is unsecured.")
	switch {
	case mode == "hang":
		fmt.Println("fake opencode: hanging before listening")
		select {}
	case mode == "exit":
		fmt.Fprintln(os.Stderr, "fake opencode: failing at start")
		os.Exit(3)
	case strings.HasPrefix(mode, "slow="):
		d, err := time.ParseDuration(strings.TrimPrefix(mode, "slow="))
		if err != nil {
			return err
		}
		time.Sleep(d)
	}
	if fp := os.Getenv("FAKEOC_FAIL_PORT"); fp != "" && fp == strconv.Itoa(port) {
		// What opencode 1.18.33 prints when its port is taken.
		fmt.Fprint(os.Stderr, "\x1b[91m\x1b[1mError: \x1b[0mUnexpected error\n\nServeError\n")
		os.Exit(1)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	st := newState()
	hb := 10 * time.Second
	if v := os.Getenv("FAKEOC_HEARTBEAT"); v != "" {
		if hb, err = time.ParseDuration(v); err != nil {
			return err
		}
	}
	st.heartbeat = hb
	st.healthy = mode != "unhealthy"
	st.mcp = os.Getenv("FAKEOC_MCP")
	if st.mcp == "" {
		st.mcp = "connected"
	}
	go func() { _ = http.Serve(ln, st.routes()) }()
	fmt.Printf("opencode server listening on http://%s\n", ln.Addr())

	if d, ok := strings.CutPrefix(mode, "crash-after="); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		time.Sleep(dur)
		fmt.Fprintln(os.Stderr, "fake opencode: crashing on purpose")
		os.Exit(4)
	}
	select {}
}

type request struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
}

type state struct {
	mu        sync.Mutex
	heartbeat time.Duration
	healthy   bool
	mcp       string
	status    map[string]string // session → busy/retry (idle ones are absent)
	parents   map[string]string // session → parent
	perms     map[string]request
	questions map[string]request
	streams   map[chan []byte]bool
	drop      chan struct{}
	seq       int
}

func newState() *state {
	return &state{
		status: map[string]string{}, parents: map[string]string{},
		perms: map[string]request{}, questions: map[string]request{},
		streams: map[chan []byte]bool{}, drop: make(chan struct{}),
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *state) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"healthy": s.healthy, "version": "fake"})
	})
	mux.HandleFunc("GET /mcp", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch s.mcp {
		case "missing":
			writeJSON(w, map[string]any{})
		case "failed", "failed-until-connect":
			writeJSON(w, map[string]any{"codehydra": map[string]any{"status": "failed", "error": "SSE error: Unable to connect."}})
		default:
			writeJSON(w, map[string]any{"codehydra": map[string]any{"status": "connected"}})
		}
	})
	mux.HandleFunc("POST /mcp/{name}/connect", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "codehydra" || s.mcp == "missing" {
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, map[string]any{"_tag": "McpServerNotFoundError"})
			return
		}
		s.mu.Lock()
		if s.mcp == "failed-until-connect" {
			s.mcp = "connected"
		}
		s.mu.Unlock()
		writeJSON(w, true)
	})
	mux.HandleFunc("GET /session/status", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out := map[string]any{}
		for id, t := range s.status {
			out[id] = map[string]string{"type": t}
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /session/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		id := r.PathValue("id")
		out := map[string]any{"id": id}
		if p := s.parents[id]; p != "" {
			out["parentID"] = p
		}
		writeJSON(w, out)
	})
	list := func(m map[string]request) http.HandlerFunc {
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
	mux.HandleFunc("GET /permission", list(s.perms))
	mux.HandleFunc("GET /question", list(s.questions))
	mux.HandleFunc("GET /event", s.events)
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
	mux.HandleFunc("POST /fake/drop", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		close(s.drop)
		s.drop = make(chan struct{})
		s.mu.Unlock()
		writeJSON(w, true)
	})
	return mux
}

// apply updates the fake's state the way opencode's would change.
func (s *state) apply(typ string, props json.RawMessage) {
	var p struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		RequestID string `json:"requestID"`
		Status    struct {
			Type string `json:"type"`
		} `json:"status"`
		Info struct {
			ID       string `json:"id"`
			ParentID string `json:"parentID"`
		} `json:"info"`
	}
	_ = json.Unmarshal(props, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch typ {
	case "session.created", "session.updated":
		if p.Info.ParentID != "" {
			s.parents[p.Info.ID] = p.Info.ParentID
		}
	case "session.deleted":
		delete(s.status, p.SessionID)
	case "session.status":
		if p.Status.Type == "idle" {
			delete(s.status, p.SessionID)
		} else {
			s.status[p.SessionID] = p.Status.Type
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
