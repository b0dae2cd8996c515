package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/mcp"
	"codehydra/workspace"
)

// oneServerGateway is an mcp.Gateway over one real go-sdk MCP server
// named "fs" in this process, reached by a real client over in-memory
// transports. It records the workspace of each call.
type oneServerGateway struct {
	srv *sdk.Server
	cs  *sdk.ClientSession

	mu  sync.Mutex
	fns []func()
	ws  []string
}

func newOneServerGateway(t *testing.T) *oneServerGateway {
	t.Helper()
	g := &oneServerGateway{srv: sdk.NewServer(&sdk.Implementation{Name: "fs", Version: "1"}, nil)}
	sdk.AddTool(g.srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := g.srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			g.mu.Lock()
			fns := slices.Clone(g.fns)
			g.mu.Unlock()
			for _, fn := range fns {
				fn()
			}
		},
	})
	if g.cs, err = client.Connect(context.Background(), ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.cs.Close(); ss.Wait() })
	return g
}

func (g *oneServerGateway) Off(string) map[string]string { return nil }

// The bridge tests pass tools only: this gateway has no resources or
// prompts.
func (g *oneServerGateway) Catalogs() []mcp.GatewayCatalog { return nil }
func (g *oneServerGateway) ReadResource(context.Context, string, string) (*sdk.ReadResourceResult, error) {
	return nil, errors.New("no resources")
}
func (g *oneServerGateway) GetPrompt(context.Context, string, string, map[string]string) (*sdk.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}
func (g *oneServerGateway) Subscribe(context.Context, string, string, bool) error {
	return errors.New("no resources")
}
func (g *oneServerGateway) OnResourceUpdated(func(string)) {}

func (g *oneServerGateway) OnToolsChanged(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fns = append(g.fns, fn)
}

func (g *oneServerGateway) Tools(ctx context.Context) []mcp.GatewayTool {
	res, err := g.cs.ListTools(ctx, nil)
	if err != nil {
		return nil
	}
	var out []mcp.GatewayTool
	for _, t := range res.Tools {
		t.Name = "fs__" + t.Name
		out = append(out, mcp.GatewayTool{Tool: t, Server: "fs"})
	}
	return out
}

func (g *oneServerGateway) Call(ctx context.Context, wsPath, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	g.mu.Lock()
	g.ws = append(g.ws, wsPath)
	g.mu.Unlock()
	return g.cs.CallTool(ctx, &sdk.CallToolParams{Name: strings.TrimPrefix(tool, "fs__"), Arguments: args})
}

func TestMCPStdioClientsListAndCallTheGatewaysTools(t *testing.T) {
	gw := newOneServerGateway(t)
	// The server gets the gateway as serve gives it; what serve starts is
	// the gateway package's part.
	ri := startRemoteInstanceWith(t, mcp.Options{Gateway: gw})
	ws, err := ri.mgr.Create(t.Context(), workspace.CreateOptions{ProjectPath: ri.project, Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	// mcp-stdio --workspace W, then without --workspace: the bridge finds
	// the running instance as the command does.
	agent, stderr, _ := connectStdio(t, ws.Path, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	user, _, _ := connectStdio(t, "", nil)

	for _, cs := range []*sdk.ClientSession{agent, user} {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v\nstderr: %s", err, stderr)
		}
		if !slices.ContainsFunc(res.Tools, func(t *sdk.Tool) bool { return t.Name == "fs__echo" }) {
			t.Fatalf("fs__echo is not listed through mcp-stdio")
		}
		got, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || got.IsError || mcp.ResultText(got) != "echo: hi" {
			t.Fatalf("fs__echo through mcp-stdio: %+v %v\nstderr: %s", got, err, stderr)
		}
	}
	gw.mu.Lock()
	calls := slices.Clone(gw.ws)
	gw.mu.Unlock()
	if !slices.Equal(calls, []string{ws.Path, ""}) {
		t.Fatalf("the calls reached the gateway for %q, want the workspace's, then none (the user's)", calls)
	}

	// A new tool of the server reaches the stdio client as
	// tools/list_changed, and is listed.
	sdk.AddTool(gw.srv, &sdk.Tool{Name: "grown"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("tools/list_changed did not reach the stdio client\nstderr: %s", stderr)
	}
	res, err := agent.ListTools(t.Context(), nil)
	if err != nil || !slices.ContainsFunc(res.Tools, func(t *sdk.Tool) bool { return t.Name == "fs__grown" }) {
		t.Fatalf("fs__grown is not listed after the change: %v", err)
	}
}

// connectStdio runs `codehydra mcp-stdio [--workspace ws]` in process
// between the SDK's client (over pipes, as a client talks to the command)
// and the running instance.
func connectStdio(t *testing.T, ws string, opts *sdk.ClientOptions) (*sdk.ClientSession, *testenv.SyncBuffer, chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &testenv.SyncBuffer{}
	c := &cli{stdin: inR, stdout: outW, stderr: stderr, getenv: os.Getenv, now: time.Now}
	var args []string
	if ws != "" {
		args = []string{"--workspace", ws}
	}
	exited := make(chan int, 1)
	go func() {
		code := runMCPStdio(t.Context(), c, args)
		outW.Close()
		exited <- code
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect through mcp-stdio: %v\nstderr: %s", err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("mcp-stdio did not stop when the client closed its input")
		}
	})
	return cs, stderr, exited
}
