//go:build unix

package gateway

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/settings"
	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// serveGateway serves g through CodeHydra's real MCP server and returns a
// real go-sdk client session with the user's token, and a channel that
// gets a value for each notifications/tools/list_changed it receives.
func serveGateway(t *testing.T, g *Gateway) (*sdk.ClientSession, <-chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	return serveGatewayTo(t, g, client), changed
}

// serveGatewayTo serves g through CodeHydra's real MCP server and
// connects client to it with the user's token.
func serveGatewayTo(t *testing.T, g *Gateway, client *sdk.Client) *sdk.ClientSession {
	t.Helper()
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir()})
	if err := mgr.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	token, err := mcp.LoadOrCreateToken(filepath.Join(t.TempDir(), "token"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcp.New(mcp.Options{Token: token, Workspaces: mgr, Gateway: g})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
		<-served
	})
	hdr := http.Header{"Authorization": {"Bearer " + token.Value()}}
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: headerRT{hdr}}, MaxRetries: -1,
	}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type headerRT struct{ h http.Header }

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestAKilledServersToolsLeaveTheClientsListAndComeBackWhenItRunsAgain(t *testing.T) {
	every := testenv.RealMCPServer(t, "mcp-server-everything")
	g := New(Options{Servers: map[string]settings.MCPServer{"every": {Command: every}}, StartTimeout: 20 * time.Second, StopTimeout: time.Second,
		// Long enough for the test to see the tools leave before the restart.
		Backoff: func(int) time.Duration { return 5 * time.Second }})
	t.Cleanup(func() { _ = g.Close() })
	cs, changed := serveGateway(t, g)
	testenv.WaitFor(t, "every__echo listed", 30*time.Second, func() bool { return slices.Contains(listed(t, cs), "every__echo") })
	for len(changed) > 0 {
		<-changed
	}

	pids := serverPIDs(t)
	if len(pids) != 1 {
		t.Fatalf("server processes %v, want one", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitChanged(t, changed, "the server was killed")
	testenv.WaitFor(t, "every__echo gone", 10*time.Second, func() bool { return !slices.Contains(listed(t, cs), "every__echo") })
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__echo", Arguments: map[string]any{"message": "x"}})
	if err == nil && !res.IsError {
		t.Fatal("a tool of the killed server still answered before its restart")
	}

	awaitChanged(t, changed, "the server restarted")
	testenv.WaitFor(t, "every__echo back", 20*time.Second, func() bool { return slices.Contains(listed(t, cs), "every__echo") })
	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "every__echo", Arguments: map[string]any{"message": "back"}})
	if err != nil || res.IsError {
		t.Fatalf("every__echo after the restart: %v %+v", err, res)
	}
	if st := g.Statuses()[0]; st.Restarts != 1 || st.State != StateRunning {
		t.Fatalf("status %+v, want running after one restart", st)
	}
}
