//go:build unix

package gateway

// Tests serve the gateway to a real go-sdk client through CodeHydra's real
// MCP server over real HTTP. policybench_test.go does too, and
// build/bench-gateway-policy.sh copies this file beside it into the
// gateway before the policies: it uses only what both have.

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/mcp"
	"codehydra/workspace"
)

// questionsProtocol is the MCP protocol version on which a server may ask
// its client during a call.
const questionsProtocol = "2025-11-25"

// servedMCP is CodeHydra's real MCP server, serving on 127.0.0.1 until the
// test ends.
type servedMCP struct {
	srv *mcp.Server
	// token is its master token.
	token *mcp.Token
}

// serveMCP serves CodeHydra's MCP server with o, its master token made
// here and, when o.Workspaces is nil, a manager of no project.
func serveMCP(tb testing.TB, o mcp.Options) servedMCP {
	tb.Helper()
	tok, err := mcp.LoadOrCreateToken(filepath.Join(tb.TempDir(), "token"))
	if err != nil {
		tb.Fatal(err)
	}
	o.Token = tok
	if o.Workspaces == nil {
		o.Workspaces = workspace.NewManager(workspace.Options{})
	}
	srv, err := mcp.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	tb.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-served
	})
	return servedMCP{srv: srv, token: tok}
}

// connect opens a real go-sdk session of client (nil: one without
// handlers) on s with token ("": the master token), on protocol ("": the
// SDK's latest); it is closed when the test ends.
func (s servedMCP) connect(tb testing.TB, client *sdk.Client, token, protocol string) *sdk.ClientSession {
	tb.Helper()
	if client == nil {
		client = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	}
	if token == "" {
		token = s.token.Value()
	}
	var opts *sdk.ClientSessionOptions
	if protocol != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: protocol}
	}
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	cs, err := client.Connect(tb.Context(), &sdk.StreamableClientTransport{Endpoint: s.srv.URL(), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, tr}}}, opts)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// bearer sends each request with a bearer token.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
