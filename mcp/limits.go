package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// Defaults of Options' limits.
const (
	DefaultRateLimit      rate.Limit    = 20
	DefaultBurst                        = 40
	DefaultCallTimeout    time.Duration = 30 * time.Second
	DefaultMaxBody        int64         = 1 << 20 // 1 MiB
	DefaultSessionIdle    time.Duration = 30 * time.Minute
	DefaultMaxSessions                  = 100
	DefaultMaxConnections               = 256
)

// maxLimiters is the size at which the limiter map is pruned of buckets
// that are full again (and so equal to fresh ones). The keys are callers
// (the user and registered workspaces) times methods and known tools, so
// the map stays small; pruning only drops the buckets of workspaces
// deleted since.
const maxLimiters = 1024

// limiterKey names one token bucket: one caller's calls of one method or
// tool. The user's calls are further kept apart by the workspace they act
// on, "" for none or one that did not resolve; a workspace's calls all act
// on it, so workspace is "" for them.
type limiterKey struct{ caller, workspace, op string }

// opUnknownTool is the op of every call of a tool that does not exist:
// they share one bucket per caller, so inventing names gains nothing.
const opUnknownTool = "tools/call of an unknown tool"

// limitKey is the bucket of a call of op by who acting on wsPath.
func limitKey(who caller, wsPath, op string) limiterKey {
	if !who.isUser() {
		wsPath = ""
	}
	return limiterKey{caller: who.name(), workspace: wsPath, op: op}
}

// rateLimiter keeps one token bucket per caller and method or tool, so
// that one busy agent cannot starve the others.
type rateLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[limiterKey]*rate.Limiter
}

func newRateLimiter(limit rate.Limit, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{limit: limit, burst: burst, now: now, buckets: make(map[limiterKey]*rate.Limiter)}
}

// allow takes one token from the bucket k, reporting false when it is
// empty.
func (r *rateLimiter) allow(k limiterKey) bool {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.buckets[k]
	if !ok {
		if len(r.buckets) >= maxLimiters {
			r.pruneLocked(now)
		}
		l = rate.NewLimiter(r.limit, r.burst)
		r.buckets[k] = l
	}
	return l.AllowN(now, 1)
}

func (r *rateLimiter) pruneLocked(now time.Time) {
	for k, l := range r.buckets {
		if l.TokensAt(now) >= float64(r.burst) {
			delete(r.buckets, k)
		}
	}
}

// limitBody answers 413 to a request whose declared length exceeds max, and
// caps the body of any other so that a chunked or lying request fails while
// being read (the SDK turns that failure into 413 too).
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, "request body larger than "+strconv.FormatInt(max, 10)+" bytes", http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}

// sessionHeader carries the MCP session a request belongs to; a POST
// without it opens a new session.
const sessionHeader = "Mcp-Session-Id"

// limitSessions refuses, with 503 and a JSON-RPC error, a request that
// would open an MCP session while MaxSessions are open or being opened.
// Idle sessions close by themselves (SessionIdle), so the refusal lasts
// only as long as clients keep theirs busy.
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
		place := s.reserveSession()
		if place == nil {
			refuseSession(w, s.opts.MaxSessions)
			return
		}
		defer place.endRequest()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), placeKey{}, place)))
	})
}

// sessionPlace is one of the MaxSessions places.
type sessionPlace struct {
	s     *Server
	mu    sync.Mutex
	taken bool // by a session, or given back
}

type placeKey struct{}

// reserveSession takes a place for a session about to be opened, nil when
// all are taken.
func (s *Server) reserveSession() *sessionPlace {
	s.placesMu.Lock()
	defer s.placesMu.Unlock()
	if s.places >= s.opts.MaxSessions {
		return nil
	}
	s.places++
	return &sessionPlace{s: s}
}

func (s *Server) releaseSession() {
	s.placesMu.Lock()
	defer s.placesMu.Unlock()
	s.places--
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
	// Ends with the session, which Shutdown closes.
	go func() {
		_ = ss.Wait()
		p.s.releaseSession()
	}()
}

// endRequest gives the place back unless a session took it.
func (p *sessionPlace) endRequest() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.taken {
		p.taken = true
		p.s.releaseSession()
	}
}

// refuseSession answers a request for a session past the cap: HTTP 503
// with a JSON-RPC error, which MCP clients show as the reason.
func refuseSession(w http.ResponseWriter, max int) {
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error": map[string]any{
			"code":    codeServerBusy,
			"message": fmt.Sprintf("too many MCP sessions are open (limit %d): close clients you no longer use, wait for idle sessions to close, or raise mcpMaxSessions in the settings", max),
		},
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
