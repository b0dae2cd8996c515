package mcp

import (
	"context"
	"net"
	"net/http"
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

func TestConnectionsPastTheCapWaitForAPlaceAndTheServerKeepsServing(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConnections = 2 })
	// Two connections that send nothing hold both places.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(h.srv.URL(), Path), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		held = append(held, c)
	}
	if code := h.initializeWithin(time.Second); code != 0 {
		t.Fatalf("a third connection was served (%d) while two held the cap of 2", code)
	}

	// One waiting for a place gets it when a held connection goes.
	waiting := make(chan int, 1)
	go func() { waiting <- h.initializeWithin(15 * time.Second) }()
	held[0].Close()
	if code := <-waiting; code != http.StatusOK {
		t.Fatalf("the waiting connection got %d once a place was free, want 200", code)
	}
	if code := h.initializeWithin(15 * time.Second); code != http.StatusOK {
		t.Fatalf("a later connection got %d, want 200", code)
	}
}
