//go:build unix

package opencode

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// testMCP is a real MCP server (the go-sdk's streamable HTTP handler) on
// 127.0.0.1 for the fake opencode to connect to. Like CodeHydra's it
// answers only requests with "Authorization: Bearer <its token>" and an
// X-Workspace-Path header, so an agent is connected only if its config
// gave it the right URL and headers.
type testMCP struct {
	port int

	mu     sync.Mutex
	token  string
	refuse int // initialize requests still to refuse with 503
	inits  []mcpInit
}

// mcpInit is one initialize request the server got.
type mcpInit struct {
	Workspace string // X-Workspace-Path
	Auth      string // Authorization
	Accepted  bool
}

func startTestMCP(t *testing.T, token string) *testMCP {
	t.Helper()
	m := &testMCP{token: token}
	server := sdk.NewServer(&sdk.Implementation{Name: "codehydra-test", Version: "0"}, nil)
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.port = ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: m.check(handler)}
	go func() { _ = srv.Serve(ln) }()
	// Close, not Shutdown: an agent's open requests must not hold the test.
	t.Cleanup(func() { srv.Close() })
	return m
}

// check refuses what CodeHydra's server refuses and records initializes.
func (m *testMCP) check(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		isInit := json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
		ws, auth := r.Header.Get("X-Workspace-Path"), r.Header.Get("Authorization")
		m.mu.Lock()
		status := http.StatusOK
		switch {
		case auth != "Bearer "+m.token:
			status = http.StatusUnauthorized
		case ws == "":
			status = http.StatusBadRequest
		case isInit && m.refuse > 0:
			m.refuse--
			status = http.StatusServiceUnavailable
		}
		if isInit {
			m.inits = append(m.inits, mcpInit{Workspace: ws, Auth: auth, Accepted: status == http.StatusOK})
		}
		m.mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, http.StatusText(status), status)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setToken makes the server accept only token from now on.
func (m *testMCP) setToken(token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.token = token
}

// refuseInits makes the server refuse the next n initialize requests.
func (m *testMCP) refuseInits(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refuse = n
}

// initializes returns the initialize requests so far, oldest first.
func (m *testMCP) initializes() []mcpInit {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mcpInit(nil), m.inits...)
}
