package mcp

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// DefaultMaxUnauthenticated is the default number of connections that
// have not yet shown a token (Options.MaxUnauthenticated).
const DefaultMaxUnauthenticated = 32

// connGate keeps the places of the MCP server's connections in two
// budgets. A connection is unauthenticated until one of its requests
// passes the token check; at most maxUnauth are, and a new one takes the
// place of the oldest (a client with its token sends its request at
// once, so a flood of others cannot keep it out). An authenticated one
// keeps its place until it closes; at most maxAuth are, and a request
// that would be one more is answered 503 and its connection closed.
// Every refusal before the token (403, 401) closes its connection too
// (see refuseAndClose), so refused requests hold no place.
type connGate struct {
	maxAuth, maxUnauth int

	mu     sync.Mutex
	seq    uint64
	unauth map[*gatedConn]uint64 // unauthenticated, with their arrival
	auth   int
}

func newConnGate(maxAuth, maxUnauth int) *connGate {
	return &connGate{maxAuth: maxAuth, maxUnauth: maxUnauth, unauth: map[*gatedConn]uint64{}}
}

// gatedConn is one connection with its place in the gate.
type gatedConn struct {
	net.Conn
	g      *connGate
	once   sync.Once
	authed bool // under g.mu
}

// Close gives its place back once and closes the connection.
func (c *gatedConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		if c.authed {
			c.g.auth--
		} else {
			delete(c.g.unauth, c)
		}
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}

// admit gives c an unauthenticated place, closing the oldest such
// connection when the budget is full.
func (g *connGate) admit(c *gatedConn) {
	g.mu.Lock()
	var oldest *gatedConn
	if len(g.unauth) >= g.maxUnauth {
		first := ^uint64(0)
		for o, n := range g.unauth {
			if n < first {
				oldest, first = o, n
			}
		}
	}
	g.seq++
	g.unauth[c] = g.seq
	g.mu.Unlock()
	if oldest != nil {
		_ = oldest.Close()
	}
}

// authenticate moves c to an authenticated place, reporting false when
// every such place is taken.
func (g *connGate) authenticate(c *gatedConn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.authed {
		return true
	}
	if g.auth >= g.maxAuth {
		return false
	}
	delete(g.unauth, c)
	c.authed = true
	g.auth++
	return true
}

// listener admits each accepted connection through the gate.
func (g *connGate) listener(ln net.Listener) net.Listener { return gateListener{ln, g} }

type gateListener struct {
	net.Listener
	g *connGate
}

func (l gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &gatedConn{Conn: c, g: l.g}
	l.g.admit(gc)
	return gc, nil
}

type connKey struct{}

// connContext keeps the connection in its requests' context
// (http.Server.ConnContext), for requireAuthPlace.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if gc, ok := c.(*gatedConn); ok {
		return context.WithValue(ctx, connKey{}, gc)
	}
	return ctx
}

// requireAuthPlace runs behind the token check: the request's connection
// takes an authenticated place, or the request is answered 503 and its
// connection closed.
func (g *connGate) requireAuthPlace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gc, ok := r.Context().Value(connKey{}).(*gatedConn); ok && !g.authenticate(gc) {
			w.Header().Set("Retry-After", "5")
			refuseAndClose(w, "Service Unavailable: every connection place is taken by other clients of this token's user; close some, or retry in a moment", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseAndClose answers code with msg and closes the connection after
// it, so that a refused client holds no place.
func refuseAndClose(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}
