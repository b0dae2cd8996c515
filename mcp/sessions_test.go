package mcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestIdleSessionIsClosedAndTheClientCanOpenANewOne(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.SessionIdle = 300 * time.Millisecond })
	ws := h.create("a")
	old := h.session(ws.Path)
	okJSON(t, call(t, old, ToolGetStatus, nil), &map[string]any{})
	waitFor(t, "the idle session to be closed", func() bool { return h.srv.Sessions() == 0 })

	if _, err := old.CallTool(context.Background(), &sdk.CallToolParams{Name: ToolGetStatus, Arguments: map[string]any{}}); err == nil {
		t.Fatal("a call on the closed session succeeded")
	}
	// A new session, as the MCP spec tells a client to open on 404.
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &map[string]any{})
}

func TestBusySessionIsNotClosedAsIdle(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.SessionIdle = 400 * time.Millisecond })
	cs := h.session(h.create("a").Path)
	for range 8 {
		time.Sleep(100 * time.Millisecond) // a client calling now and then
		okJSON(t, call(t, cs, ToolGetStatus, nil), &map[string]any{})
	}
}

// openRaw sends an initialize without a session, as a client opening one.
func (h *harness) openRaw() *http.Response {
	h.t.Helper()
	return h.rawRequest(http.MethodPost, Path, h.authHeader(mcpHeaders()), strings.NewReader(initializeBody))
}

func TestSessionsPastTheCapAreRefusedWithAClearError(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxSessions = 2 })
	ws := h.create("a")
	first := h.session(ws.Path)
	h.session(ws.Path)

	resp := h.openRaw()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third session: %d %s, want 503", resp.StatusCode, body)
	}
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &rpc); err != nil || !strings.Contains(rpc.Error.Message, "too many MCP sessions") ||
		!strings.Contains(rpc.Error.Message, "mcpMaxSessions") {
		t.Fatalf("the refusal %s does not say why and what to do (%v)", body, err)
	}
	if h.srv.Sessions() != 2 {
		t.Fatalf("%d sessions open, want 2", h.srv.Sessions())
	}
	// Sessions already open go on working; a closed one frees its place.
	okJSON(t, call(t, first, ToolGetStatus, nil), &map[string]any{})
	first.Close()
	waitFor(t, "the closed session to go", func() bool { return h.srv.Sessions() == 1 })
	okJSON(t, call(t, h.session(ws.Path), ToolGetStatus, nil), &map[string]any{})
}

func TestConcurrentSessionsNeverPassTheCap(t *testing.T) {
	const limit = 3
	h := newHarness(t, func(o *Options) { o.MaxSessions = limit })
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		opened  int
		refused int
	)
	for range 12 {
		wg.Go(func() {
			resp := h.openRaw()
			_, _ = io.Copy(io.Discard, resp.Body)
			mu.Lock()
			defer mu.Unlock()
			switch resp.StatusCode {
			case http.StatusOK:
				opened++
			case http.StatusServiceUnavailable:
				refused++
			default:
				t.Errorf("open a session: %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if opened != limit || refused != 12-limit {
		t.Fatalf("%d sessions opened and %d refused, want %d opened and the rest refused", opened, refused, limit)
	}
	if n := h.srv.Sessions(); n > limit {
		t.Fatalf("%d sessions open, cap %d", n, limit)
	}
}
