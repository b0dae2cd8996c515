package mcp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRequestsWithoutTheTokenGet401(t *testing.T) {
	h := newHarness(t)
	old := h.token.Value()
	if err := h.token.Rotate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, auth string
	}{
		{"no header", ""},
		{"wrong token", "Bearer " + strings.Repeat("0", 64)},
		{"token before rotation", "Bearer " + old},
		{"basic scheme", "Basic " + h.token.Value()},
		{"bare token", h.token.Value()},
		{"empty bearer", "Bearer "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := mcpHeaders()
			if tc.auth != "" {
				hdr.Set("Authorization", tc.auth)
			}
			resp := h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(initializeBody))
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Fatalf("WWW-Authenticate %q, want Bearer", got)
			}
		})
	}
	t.Run("current token, lower-case scheme", func(t *testing.T) {
		hdr := mcpHeaders()
		hdr.Set("Authorization", "bearer "+h.token.Value())
		if resp := h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(initializeBody)); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	})
}

func TestCrossOriginAndForeignHostRequestsGet403(t *testing.T) {
	h := newHarness(t)
	port := strconv.Itoa(h.srv.Port())
	tests := []struct {
		name   string
		method string
		set    map[string]string
		want   int
	}{
		{"cross-site origin", http.MethodPost, map[string]string{"Origin": "http://evil.example"}, 403},
		{"sec-fetch-site cross-site", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"sec-fetch-site same-site", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site GET event stream", http.MethodGet, map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site preflight", http.MethodOptions, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"foreign host", http.MethodPost, map[string]string{"Host": "evil.example:" + port}, 403},
		{"rebinding host without port", http.MethodPost, map[string]string{"Host": "evil.example"}, 403},
		{"loopback host, other port", http.MethodPost, map[string]string{"Host": "127.0.0.1:1"}, 403},
		{"localhost without port", http.MethodPost, map[string]string{"Host": "localhost"}, 403},
		{"other loopback address", http.MethodPost, map[string]string{"Host": "127.0.0.2:" + port}, 403},
		{"suffix trick", http.MethodPost, map[string]string{"Host": "localhost.evil.example:" + port}, 403},
		{"same origin", http.MethodPost, map[string]string{"Origin": "http://127.0.0.1:" + port}, 200},
		{"sec-fetch-site none", http.MethodPost, map[string]string{"Sec-Fetch-Site": "none"}, 200},
		{"host localhost", http.MethodPost, map[string]string{"Host": "localhost:" + port}, 200},
		{"host ipv6 loopback", http.MethodPost, map[string]string{"Host": "[::1]:" + port}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := h.authHeader(mcpHeaders())
			for k, v := range tc.set {
				hdr.Set(k, v)
			}
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader(initializeBody)
			}
			resp := h.rawRequest(tc.method, Path, hdr, body)
			if resp.StatusCode != tc.want {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
}

func TestBodiesOverOneMebibyteGet413(t *testing.T) {
	h := newHarness(t)
	const limit = 1 << 20
	// A valid initialize request padded to exactly n bytes.
	padded := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`
		tail := `","version":"1"}}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	tests := []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at the limit", limit, false, http.StatusOK},
		{"one byte over", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"chunked over", limit + 1, true, http.StatusRequestEntityTooLarge},
		{"chunked far over", 3 * limit, true, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(padded(tc.size))
			if tc.chunked {
				// Hiding the length makes the client send it chunked.
				body = io.MultiReader(body)
			}
			resp := h.rawRequest(http.MethodPost, Path, h.authHeader(mcpHeaders()), body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestPathsOtherThanMCPGet404(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/", "/mcp/", "/mcp/x", "/MCP", "/sse", "/health"} {
		t.Run(p, func(t *testing.T) {
			resp := h.rawRequest(http.MethodPost, p, h.authHeader(mcpHeaders()), strings.NewReader(initializeBody))
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status %d, want 404", resp.StatusCode)
			}
		})
	}
}

func TestHeaderWithNULIsRejectedBeforeAnyHandler(t *testing.T) {
	h := newHarness(t)
	ws := h.create("nul")
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.srv.Port())), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"+
		"X-Workspace-Path: %s\x00/../x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Content-Length: %d\r\n\r\n%s", h.srv.Port(), h.token.Value(), ws.Path, len(initializeBody), initializeBody)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400 from the HTTP layer", resp.StatusCode)
	}
	if n := h.srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions opened by a request with NUL in a header", n)
	}
}
