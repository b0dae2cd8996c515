package mcp

import (
	"net/http"
	"strconv"
	"sync"
	"time"

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

// serverLimits keeps one bucket per gateway server with a rateLimit
// (GatewayTool.PerMinute), shared by all its callers: perMinute calls in a
// burst, refilled at perMinute a minute.
type serverLimits struct {
	now func() time.Time

	mu sync.Mutex
	by map[string]serverLimit
}

type serverLimit struct {
	perMinute int
	l         *rateLimiter
}

func newServerLimits(now func() time.Time) *serverLimits {
	return &serverLimits{now: now, by: map[string]serverLimit{}}
}

// allow takes one token from server's bucket, reporting false when it is
// empty; perMinute 0 takes none. A changed perMinute starts a new bucket.
func (s *serverLimits) allow(server string, perMinute int) bool {
	if perMinute <= 0 {
		return true
	}
	s.mu.Lock()
	sl, ok := s.by[server]
	if !ok || sl.perMinute != perMinute {
		sl = serverLimit{perMinute: perMinute, l: newRateLimiter(rate.Limit(float64(perMinute)/60), perMinute, s.now)}
		s.by[server] = sl
	}
	s.mu.Unlock()
	return sl.l.allow(limiterKey{op: server})
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
