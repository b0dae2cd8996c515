package mcp

import (
	"context"
	"fmt"
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
// keeps its place until it closes; at most maxAuth are, a workspace's
// token holding at most a quarter of them, and a request that would be
// one more is answered 503 and its connection closed.
// Every refusal before the token (403, 401) closes its connection too
// (see refuseAndClose), so refused requests hold no place.
type connGate struct {
	maxAuth, maxUnauth int

	mu      sync.Mutex
	seq     uint64
	unauth  map[*gatedConn]uint64 // unauthenticated, with their arrival
	auth    int
	byOwner map[string]int // authenticated places per workspace token
}

func newConnGate(maxAuth, maxUnauth int) *connGate {
	return &connGate{maxAuth: maxAuth, maxUnauth: maxUnauth, unauth: map[*gatedConn]uint64{}, byOwner: map[string]int{}}
}

// ownerShare is the most authenticated places one workspace's token may
// hold, as for sessions: a quarter, so that one agent cannot take them
// all from the others and the user.
func (g *connGate) ownerShare() int { return max(1, g.maxAuth/4) }

// gatedConn is one connection with its place in the gate.
type gatedConn struct {
	net.Conn
	g    *connGate
	once sync.Once
	// Under g.mu: whether it holds an authenticated place (and whose:
	// "" for the user), and whether it was closed.
	authed bool
	owner  string
	closed bool
}

// Close gives its place back once and closes the connection.
func (c *gatedConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		c.closed = true
		if c.authed {
			c.g.auth--
			if c.owner != "" {
				if c.g.byOwner[c.owner]--; c.g.byOwner[c.owner] <= 0 {
					delete(c.g.byOwner, c.owner)
				}
			}
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

// authenticate moves c to an authenticated place of owner ("" for the
// user, else a workspace's token), or says why it cannot: every place is
// taken, or owner holds its share. A connection closed meanwhile (the
// oldest without a token, given up for a newer one) takes none.
func (g *connGate) authenticate(c *gatedConn, owner string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case c.authed:
		return ""
	case c.closed:
		return "the connection was closed"
	case g.auth >= g.maxAuth:
		return "every connection place is taken by other clients; close some, or retry in a moment"
	case owner != "" && g.byOwner[owner] >= g.ownerShare():
		return fmt.Sprintf("this workspace's token holds %d connections, its share of the %d places; close some, or retry in a moment", g.byOwner[owner], g.maxAuth)
	}
	delete(g.unauth, c)
	c.authed, c.owner = true, owner
	g.auth++
	if owner != "" {
		g.byOwner[owner]++
	}
	return ""
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
		gc, ok := r.Context().Value(connKey{}).(*gatedConn)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		owner := ""
		if who, ok := r.Context().Value(callerKey{}).(caller); ok && !who.isUser() {
			owner = who.name()
		}
		if why := g.authenticate(gc, owner); why != "" {
			w.Header().Set("Retry-After", "5")
			refuseAndClose(w, "Service Unavailable: "+why, http.StatusServiceUnavailable)
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
