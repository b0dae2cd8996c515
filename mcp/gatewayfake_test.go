package mcp

import (
	"codehydra/workspace"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeGateway is a Gateway over real go-sdk MCP servers in this process,
// one per "server", each reached by a real MCP client over in-memory
// transports: what the gateway package does with real processes, minus
// the processes. It records what reaches it.
type fakeGateway struct {
	noCatalog
	t testing.TB

	mu      sync.Mutex
	servers []*fakeMCP
	fns     []func()
	calls   []gatewayCall
	// block, when set, makes Tools wait for it to close (or ctx): a
	// server that never answers its tools/list.
	block chan struct{}
	// known makes Tools answer whatever ctx's deadline, as a gateway
	// that knows its servers' tools already does.
	known bool
	// off is, per workspace, the servers it does not see, with why.
	off map[string]map[string]string
}

// fakeMCP is one server of a fakeGateway.
type fakeMCP struct {
	name                  string
	srv                   *sdk.Server
	cs                    *sdk.ClientSession
	confine, perWorkspace bool
	workDir               string
	stopped               bool // not started yet: no tools
	down                  bool // calls fail as when its process died
	// policy, when set, gives each of its tools the settings' policies
	// the gateway package would (Hidden, PathsAllow, PathsDeny,
	// PerMinute); it is given the server's own tool name.
	policy func(tool string, gt *GatewayTool)
}

// gatewayCall is a call that reached the gateway.
type gatewayCall struct {
	ws, tool string
	args     json.RawMessage
}

func newFakeGateway(t testing.TB) *fakeGateway { return &fakeGateway{t: t} }

// withGateway gives the harness's server g.
func withGateway(g Gateway) harnessOption { return func(o *Options) { o.Gateway = g } }

// add starts a server named name with the tools setup adds and connects
// to it. A change of its tool list reaches the gateway's listeners, as
// the gateway package passes notifications/tools/list_changed on.
func (g *fakeGateway) add(name string, setup func(*sdk.Server)) *fakeMCP {
	g.t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	setup(srv)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { g.notify() },
		// The in-memory servers speak the multi round-trip protocol: a
		// question comes in the call's own context, as in the gateway
		// package.
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if ask := AskerOf(ctx); ask != nil {
				return ask(ctx, req.Params)
			}
			return &sdk.ElicitResult{Action: answerDecline}, nil
		},
	})
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { cs.Close(); ss.Wait() })
	m := &fakeMCP{name: name, srv: srv, cs: cs}
	g.mu.Lock()
	g.servers = append(g.servers, m)
	g.mu.Unlock()
	return m
}

// set changes a server's state under the lock and tells the listeners.
func (g *fakeGateway) set(f func()) {
	g.mu.Lock()
	f()
	g.mu.Unlock()
	g.notify()
}

func (g *fakeGateway) notify() {
	g.mu.Lock()
	fns := append([]func(){}, g.fns...)
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (g *fakeGateway) Off(wsPath string) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.off[wsPath]
}

// switchOff switches server off (or on) for the workspace at wsPath and
// tells the listeners, as the gateway package does when the user flips
// the workspace's toggle.
func (g *fakeGateway) switchOff(wsPath, server string, off bool) {
	g.set(func() {
		if g.off == nil {
			g.off = map[string]map[string]string{}
		}
		if g.off[wsPath] == nil {
			g.off[wsPath] = map[string]string{}
		}
		if off {
			g.off[wsPath][server] = "the MCP server " + server + " is switched off for this workspace"
		} else {
			delete(g.off[wsPath], server)
		}
	})
}

func (g *fakeGateway) OnToolsChanged(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fns = append(g.fns, fn)
}

func (g *fakeGateway) Tools(ctx context.Context) []GatewayTool {
	g.mu.Lock()
	block := g.block
	servers := append([]*fakeMCP{}, g.servers...)
	if g.known {
		ctx = context.WithoutCancel(ctx)
	}
	g.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil
		}
	}
	var out []GatewayTool
	for _, m := range servers {
		g.mu.Lock()
		stopped, policy := m.stopped, m.policy
		g.mu.Unlock()
		if stopped {
			continue
		}
		res, err := m.cs.ListTools(ctx, nil)
		if err != nil {
			continue
		}
		for _, t := range res.Tools {
			// A copy, as the gateway package makes: the client session
			// keeps res.Tools to look its tools up on each call.
			c := *t
			c.Name = m.name + "__" + t.Name
			gt := GatewayTool{Tool: &c, Server: m.name, Confine: m.confine, PerWorkspace: m.perWorkspace, WorkDir: m.workDir}
			if policy != nil {
				policy(t.Name, &gt)
			}
			out = append(out, gt)
		}
	}
	return out
}

func (g *fakeGateway) Call(ctx context.Context, wsPath, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	g.mu.Lock()
	g.calls = append(g.calls, gatewayCall{ws: wsPath, tool: tool, args: args})
	var m *fakeMCP
	for _, s := range g.servers {
		if strings.HasPrefix(tool, s.name+"__") {
			m = s
		}
	}
	down := m != nil && m.down
	g.mu.Unlock()
	switch {
	case m == nil:
		return nil, errors.New("no such server")
	case down:
		return nil, errors.New("its process exited (status 1); restarting in 1s")
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return m.cs.CallTool(ctx, &sdk.CallToolParams{Name: strings.TrimPrefix(tool, m.name+"__"), Arguments: args})
}

// reached is the calls that reached the gateway so far.
func (g *fakeGateway) reached() []gatewayCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gatewayCall{}, g.calls...)
}

// sessionNotified opens a session as sessionAs does, with the standalone
// event stream on which the server sends tools/list_changed, and reports
// each such notification on changed.
func (h *harness) sessionNotified(token, wsPath string, changed chan<- struct{}) *sdk.ClientSession {
	h.t.Helper()
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:   h.srv.URL(),
		HTTPClient: &http.Client{Transport: &headerTransport{base: newTransport(h.t), header: hdr}},
		MaxRetries: -1,
	}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolSessions})
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// wantForbiddenBeforeGateway calls tool with args as cs and checks that
// the call is refused forbidden, saying says, and never reaches g.
func wantForbiddenBeforeGateway(t testing.TB, g *fakeGateway, cs *sdk.ClientSession, name, tool string, args any, says string) {
	t.Helper()
	before := len(g.reached())
	code, msg := errCode(t, call(t, cs, tool, args))
	if code != workspace.CodeForbidden || !strings.Contains(msg, says) {
		t.Errorf("%s: %s %q, want forbidden saying %q", name, code, msg, says)
	}
	if len(g.reached()) != before {
		t.Errorf("%s: the call reached the gateway", name)
	}
}

// noCatalog is a Gateway's resources and prompts part for a fake that has
// none: the gateway package's tests pass server-everything's through the
// real server (resources_test.go).
type noCatalog struct{}

func (noCatalog) Catalogs() []GatewayCatalog { return nil }
func (noCatalog) ReadResource(context.Context, string, string) (*sdk.ReadResourceResult, error) {
	return nil, errors.New("no resources")
}
func (noCatalog) GetPrompt(context.Context, string, string, map[string]string) (*sdk.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}
func (noCatalog) Subscribe(context.Context, string, string, bool) error {
	return errors.New("no resources")
}
func (noCatalog) OnResourceUpdated(func(string)) {}
