package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// initializeWithin sends an initialize on a connection of its own and
// reports its status, or 0 when no answer came within d.
func (h *harness) initializeWithin(d time.Duration) int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL(), strings.NewReader(initializeBody))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header = h.authHeader(mcpHeaders())
	tr := newTransport(h.t)
	tr.DisableKeepAlives = true
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rawInitialize sends one initialize on c, with the token when token is
// set, and reads the answer; the connection stays open (HTTP/1.1).
func (h *harness) rawInitialize(c net.Conn, token bool) (*http.Response, *bufio.Reader) {
	h.t.Helper()
	return h.rawInitializeWith(c, func(req *http.Request) {
		if token {
			req.Header = h.authHeader(req.Header)
		}
	})
}

// rawInitializeWith is rawInitialize with the request as change leaves
// it.
func (h *harness) rawInitializeWith(c net.Conn, change func(*http.Request)) (*http.Response, *bufio.Reader) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL(), strings.NewReader(initializeBody))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header = mcpHeaders()
	change(req)
	if err := req.Write(c); err != nil {
		h.t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		h.t.Fatalf("no answer on a raw connection: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, br
}

// authenticated is the number of authenticated places taken.
func (g *connGate) authenticated() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.auth
}

// dial opens a connection to the server, closed at the end of the test.
func (h *harness) dial() net.Conn {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(h.srv.URL(), Path), "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer says whether the server closed c (a read ends at once).
func closedByServer(c net.Conn, br *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// TestATokenlessFloodHoldsNoPlaceAndTheUserIsServed: the review held all
// 256 places with one request per socket, each answered 401 and kept
// open, and the user's own call timed out. Now a refused request closes
// its connection, only connections that showed a token count against
// the cap, and those without one share a small budget where a new one
// takes the oldest's place.
func TestATokenlessFloodHoldsNoPlaceAndTheUserIsServed(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConnections, o.MaxUnauthenticated = 2, 4 })

	// The review's flood: one request without a token per socket.
	for i := range 10 {
		c := h.dial()
		resp, br := h.rawInitialize(c, false)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("flood request %d: %d, want 401", i, resp.StatusCode)
		}
		if !closedByServer(c, br) {
			t.Fatalf("flood connection %d stayed open after its 401", i)
		}
	}
	if code := h.initializeWithin(15 * time.Second); code != http.StatusOK {
		t.Fatalf("the user's call after the flood: %d, want 200", code)
	}

	// Connections that send nothing, more than the budget: the newest
	// takes the oldest's place, so the user still gets in.
	for range 10 {
		h.dial()
	}
	if code := h.initializeWithin(15 * time.Second); code != http.StatusOK {
		t.Fatalf("the user's call among silent connections: %d, want 200", code)
	}

	// Connections with a token count against the cap: past it, 503 and
	// closed; a place freed is taken again. The user's calls above closed
	// their connections, but the server lets go of its end a moment after
	// the answer is read: wait until it has, or the first held connection
	// below would find the cap still full.
	waitFor(t, "the user's earlier calls to give their places back", func() bool { return h.srv.gate.authenticated() == 0 })
	var held []net.Conn
	for range 2 {
		c := h.dial()
		if resp, _ := h.rawInitialize(c, true); resp.StatusCode != http.StatusOK {
			t.Fatalf("an authenticated connection within the cap: %d", resp.StatusCode)
		}
		held = append(held, c)
	}
	c := h.dial()
	resp, br := h.rawInitialize(c, true)
	if resp.StatusCode != http.StatusServiceUnavailable || !closedByServer(c, br) {
		t.Fatalf("a third authenticated connection with a cap of 2: %d, want 503 and closed", resp.StatusCode)
	}
	held[0].Close()
	waitFor(t, "a place freed by an authenticated connection", func() bool { return h.initializeWithin(5*time.Second) == http.StatusOK })
}

// TestA403ClosesItsConnectionAsA401Does: a refused request must hold no
// connection place, whatever refused it. A foreign or rebinding Host and
// a cross-site request (Origin, Sec-Fetch-Site) are answered 403 before
// the token is looked at, with or without one, and the server closes the
// connection after the answer.
func TestA403ClosesItsConnectionAsA401Does(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConnections, o.MaxUnauthenticated = 2, 4 })
	port := strconv.Itoa(h.srv.Port())
	for name, change := range map[string]func(*http.Request){
		"a foreign Host":            func(r *http.Request) { r.Host = "evil.example:" + port },
		"a rebinding Host":          func(r *http.Request) { r.Host = "127.0.0.1.evil.example:" + port },
		"a Host with another port":  func(r *http.Request) { r.Host = "127.0.0.1:1" },
		"a cross-site Origin":       func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") },
		"a null Origin":             func(r *http.Request) { r.Header.Set("Origin", "null") },
		"Sec-Fetch-Site cross-site": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
	} {
		for _, token := range []bool{false, true} {
			c := h.dial()
			resp, br := h.rawInitializeWith(c, func(r *http.Request) {
				if token {
					r.Header = h.authHeader(r.Header)
				}
				change(r)
			})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s (token %v): %d, want 403", name, token, resp.StatusCode)
			}
			if !closedByServer(c, br) {
				t.Errorf("%s (token %v): the connection stayed open after its 403", name, token)
			}
		}
	}
	if code := h.initializeWithin(15 * time.Second); code != http.StatusOK {
		t.Fatalf("the user's call after the refused ones: %d, want 200", code)
	}
}

// TestTheConnectionGateLosesNoPlace: a connection given up for a newer
// one while its request was being read still reached the token check,
// took an authenticated place, and never gave it back (its Close had
// already run): a flood could leak the places one by one. And one
// workspace's token holds at most a quarter of the places, as for
// sessions.
func TestTheConnectionGateLosesNoPlace(t *testing.T) {
	g := newConnGate(8, 1)
	conn := func() *gatedConn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		c := &gatedConn{Conn: a, g: g}
		g.admit(c)
		return c
	}
	c1 := conn()
	conn() // takes c1's place: c1 is closed
	if why := g.authenticate(c1, ""); why == "" {
		t.Fatal("a closed connection took an authenticated place")
	}
	c1.Close()
	if n := g.authenticated(); n != 0 {
		t.Fatalf("%d authenticated places taken after the only one closed, want 0", n)
	}

	var held []*gatedConn
	for i := range 2 {
		c := conn()
		if why := g.authenticate(c, "/ws/a"); why != "" {
			t.Fatalf("workspace a's connection %d: %s", i, why)
		}
		held = append(held, c)
	}
	if why := g.authenticate(conn(), "/ws/a"); !strings.Contains(why, "its share") {
		t.Fatalf("workspace a's third connection (a quarter of 8 is 2): %q, want refused", why)
	}
	if why := g.authenticate(conn(), "/ws/b"); why != "" {
		t.Fatalf("workspace b: %s", why)
	}
	if why := g.authenticate(conn(), ""); why != "" {
		t.Fatalf("the user: %s", why)
	}
	held[0].Close()
	if why := g.authenticate(conn(), "/ws/a"); why != "" {
		t.Fatalf("workspace a after closing one: %s", why)
	}
}
