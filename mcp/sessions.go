package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// MCP sessions are bounded twice: MaxSessions for everyone together, and
// MaxSessionsPerWorkspace for the callers holding one workspace's token,
// so that one agent (or whatever runs with its token) cannot take every
// place and lock the others out. The user (the master token) may use the
// whole cap. A workspace's sessions are also closed as soon as its
// registration ends, so that an agent's open session cannot outlive it.

// sessionHeader carries the MCP session a request belongs to; a POST
// without it opens a new session.
const sessionHeader = "Mcp-Session-Id"

// perWorkspaceShare is the default MaxSessionsPerWorkspace: a quarter of
// MaxSessions (at least one), so at least four workspaces fill the cap.
func perWorkspaceShare(maxSessions int) int { return max(1, maxSessions/4) }

// limitSessions refuses, with 503 and a JSON-RPC error, a request that
// would open an MCP session while MaxSessions are open or being opened, or
// while its caller, a workspace, holds MaxSessionsPerWorkspace. Idle
// sessions close by themselves (SessionIdle), so the refusal lasts only as
// long as clients keep theirs busy.
//
// Each session holds a place from the request that opens it until it
// closes: the request reserves it, the session's first request takes it
// over (the session's requests see the opening request's context values),
// and a request that opened no session gives it back as it ends.
func (s *Server) limitSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" {
			next.ServeHTTP(w, r)
			return
		}
		who, ok := r.Context().Value(callerKey{}).(caller)
		if !ok {
			who = unidentified()
		}
		place, refusal := s.reserveSession(who)
		if place == nil {
			refuseSession(w, refusal)
			return
		}
		defer place.endRequest()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), placeKey{}, place)))
	})
}

// sessionPlace is one of the MaxSessions places.
type sessionPlace struct {
	s   *Server
	who caller

	mu    sync.Mutex
	taken bool // by a session, or given back
}

type placeKey struct{}

// sessionPlaces counts the places taken, in all and by each workspace, and
// knows the session that holds each place taken by one.
type sessionPlaces struct {
	mu     sync.Mutex
	all    int
	byName map[string]int
	open   map[*sessionPlace]*sdk.ServerSession
	// listens are the stateless era's subscriptions/listen streams under
	// way, by the session each lives in, with their callers: they hold no
	// place, but end with their workspace as a session does.
	listens map[*sdk.ServerSession]caller
}

// listening keeps ss, whose subscriptions/listen who made, among the
// streams closeStaleSessions ends, until the returned func is called.
func (sp *sessionPlaces) listening(ss *sdk.ServerSession, who caller) (done func()) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.listens == nil {
		sp.listens = map[*sdk.ServerSession]caller{}
	}
	sp.listens[ss] = who
	return func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		delete(sp.listens, ss)
	}
}

// reserveSession takes a place for a session about to be opened by who,
// or says why there is none.
func (s *Server) reserveSession(who caller) (*sessionPlace, string) {
	sp := &s.places
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.all >= s.opts.MaxSessions {
		return nil, fmt.Sprintf("too many MCP sessions are open (limit %d): close clients you no longer use, wait for idle sessions to close, or raise mcpMaxSessions in the settings", s.opts.MaxSessions)
	}
	if !who.isUser() && sp.byName[who.name()] >= s.opts.MaxSessionsPerWorkspace {
		return nil, fmt.Sprintf("this workspace has too many MCP sessions open (a workspace may hold %d, a quarter of mcpMaxSessions): close clients of this workspace you no longer use, or wait for its idle sessions to close", s.opts.MaxSessionsPerWorkspace)
	}
	if sp.byName == nil {
		sp.byName, sp.open = map[string]int{}, map[*sessionPlace]*sdk.ServerSession{}
	}
	sp.all++
	if !who.isUser() {
		sp.byName[who.name()]++
	}
	return &sessionPlace{s: s, who: who}, ""
}

// release gives p's place back.
func (p *sessionPlace) release() {
	sp := &p.s.places
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.all--
	delete(sp.open, p)
	if !p.who.isUser() {
		if sp.byName[p.who.name()]--; sp.byName[p.who.name()] <= 0 {
			delete(sp.byName, p.who.name())
		}
	}
}

// takePlace hands the place reserved by the request that opened the
// session over to the session, which gives it back when it closes. Only
// the session's first request finds the place still free.
func takePlace(ctx context.Context, ss *sdk.ServerSession) {
	p, ok := ctx.Value(placeKey{}).(*sessionPlace)
	if !ok || ss == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken {
		return
	}
	p.taken = true
	sp := &p.s.places
	sp.mu.Lock()
	sp.open[p] = ss
	sp.mu.Unlock()
	// Ends with the session, which Shutdown closes.
	go func() {
		_ = ss.Wait()
		p.release()
	}()
}

// endRequest gives the place back unless a session took it.
func (p *sessionPlace) endRequest() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.taken {
		p.taken = true
		p.release()
	}
}

// closeStaleSessions closes every session opened with a workspace token
// that would be refused now, and every listen stream of such a token, and
// ends the held calls (mcp/roundtrip.go) of such a token: its workspace is
// gone, or another workspace (a new registration) has its path.
func (s *Server) closeStaleSessions() {
	sp := &s.places
	sp.mu.Lock()
	held := make(map[*sdk.ServerSession]caller, len(sp.open)+len(sp.listens))
	for p, ss := range sp.open {
		held[ss] = p.who
	}
	for ss, who := range sp.listens {
		held[ss] = who
	}
	sp.mu.Unlock()
	for ss, who := range held {
		if who.isUser() || s.ids.current(who) {
			continue
		}
		s.log.Info("closing an MCP session of a workspace that is gone", slog.String("workspace", who.name()))
		_ = ss.Close()
	}
	s.held.end(func(who caller) bool { return !s.ids.current(who) })
}

// followWorkspaces forgets the tokens of workspaces as they go and closes
// their sessions, until ctx ends. Every request is checked against the
// workspaces as they are anyway; this only makes a gone workspace's open
// sessions end at once instead of at their next request or idle timeout.
func (s *Server) followWorkspaces(ctx context.Context, events <-chan workspace.Event) {
	workspace.Follow(ctx, events, func(batch []workspace.Event) {
		gone := false
		for _, e := range batch {
			switch e.Kind {
			case workspace.EventWorkspaceRemoved:
				s.ids.forget(e.Workspace.Path)
				gone = true
			case workspace.EventProjectRemoved, workspace.EventWorkspaceAdded:
				// An added workspace may take the path of one whose
				// removal this subscriber missed (events can be dropped).
				s.ids.changed()
				gone = true
			}
		}
		if gone {
			s.closeStaleSessions()
		}
	})
}

// refuseSession answers a request for a session past a cap: HTTP 503 with
// a JSON-RPC error, which MCP clients show as the reason.
func refuseSession(w http.ResponseWriter, why string) {
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": codeServerBusy, "message": why},
	})
	if err != nil {
		// Unreachable: the map holds strings and numbers only.
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many MCP sessions are open"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "60")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// codeServerBusy is the JSON-RPC error code of a request refused by a
// limit (the implementation-defined server-error range).
const codeServerBusy = -32000
