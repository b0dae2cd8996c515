package mcp

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogGateway offers fixed catalogs, keeps a fixed choice of servers
// per workspace, and records the reads and gets that reach it.
type catalogGateway struct {
	staticGateway

	mu      sync.Mutex
	off     map[string]map[string]string
	fns     []func()
	reached []string
}

func (g *catalogGateway) Off(ws string) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.off[ws]
}

func (g *catalogGateway) OnToolsChanged(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fns = append(g.fns, fn)
}

func (g *catalogGateway) record(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reached = append(g.reached, s)
}

func (g *catalogGateway) reads() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reached)
}

func (g *catalogGateway) ReadResource(_ context.Context, ws, uri string) (*sdk.ReadResourceResult, error) {
	g.record(ws + " read " + uri)
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, Text: "contents"}}}, nil
}

func (g *catalogGateway) GetPrompt(_ context.Context, ws, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	g.record(ws + " get " + name + " " + args["city"])
	return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi " + args["city"]}}}}, nil
}

func TestGatewayResourcesAndPromptsKeepTheWorkspacesChoiceAndConfinement(t *testing.T) {
	gw := &catalogGateway{}
	gw.cats = []GatewayCatalog{
		{Server: "docs", Resources: []*sdk.Resource{
			{Name: "one", URI: GatewayResourceURI("docs", "x://one")},
			{Name: "bad", URI: GatewayResourceURI("docs", "x://%zz")}, // url.Parse refuses it
		}, Templates: []*sdk.ResourceTemplate{
			{Name: "page", URITemplate: GatewayResourceURI("docs", "x://page/{n}")},
			{Name: "broken", URITemplate: GatewayResourceURI("docs", "x://{broken")},
		}, Prompts: []*sdk.Prompt{{Name: "docs__ask"}, {Name: "notmine"}}},
		{Server: "fs", Resources: []*sdk.Resource{{Name: "f", URI: GatewayResourceURI("fs", "file:///etc/passwd")}},
			Policy: GatewayTool{Server: "fs", Confine: true, PerWorkspace: true}},
		{Server: "away", Resources: []*sdk.Resource{{Name: "gone", URI: GatewayResourceURI("away", "x://gone")}},
			Prompts: []*sdk.Prompt{{Name: "away__ask"}}},
	}
	h := newHarness(t, withGateway(gw))
	a := h.create("a")
	gw.switchOff(a.Path, "away", true)
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	ctx := t.Context()

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	want := []string{"codehydra-gw://docs/x://one", "codehydra-gw://fs/file:///etc/passwd"}
	if !slices.Equal(uris, want) {
		t.Fatalf("resources for a = %v, want %v (not the switched-off server's, not the one the SDK refuses)", uris, want)
	}
	tres, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tres.ResourceTemplates) != 1 || tres.ResourceTemplates[0].URITemplate != "codehydra-gw://docs/x://page/{n}" {
		t.Fatalf("templates = %+v, %v; want docs's page only", tres, err)
	}
	pres, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pres.Prompts) != 1 || pres.Prompts[0].Name != "docs__ask" {
		t.Fatalf("prompts = %+v, %v; want docs__ask only", pres, err)
	}

	// Reads: any URI of a server the workspace sees, listed or not; the
	// switched-off server's and a confined server's path outside the
	// workspace never reach the gateway.
	for _, uri := range []string{"codehydra-gw://docs/x://one", "codehydra-gw://docs/x://page/7", "codehydra-gw://fs/file://" + a.Path + "/README.md"} {
		if r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil || r.Contents[0].Text != "contents" {
			t.Fatalf("read %s = %+v, %v", uri, r, err)
		}
	}
	for uri, says := range map[string]string{
		"codehydra-gw://away/x://gone":         "switched off for this workspace",
		"codehydra-gw://fs/file:///etc/passwd": "outside it",
		"codehydra-gw://fs//etc/passwd":        "outside it",
	} {
		_, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), says) {
			t.Errorf("read %s = %v, want forbidden saying %q", uri, err, says)
		}
	}
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "away__ask"}); err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Errorf("get away__ask = %v, want forbidden", err)
	}
	g, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "docs__ask", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || g.Messages[0].Content.(*sdk.TextContent).Text != "hi Paris" {
		t.Fatalf("get docs__ask = %+v, %v", g, err)
	}
	wantReached := []string{
		a.Path + " read codehydra-gw://docs/x://one",
		a.Path + " read codehydra-gw://docs/x://page/7",
		a.Path + " read codehydra-gw://fs/file://" + a.Path + "/README.md",
		a.Path + " get docs__ask Paris",
	}
	if got := gw.reads(); !slices.Equal(got, wantReached) {
		t.Fatalf("reached the gateway:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantReached, "\n"))
	}

	// The user's token sees every server.
	us := h.sessionAs(h.token.Value(), "")
	if res, err := us.ListResources(ctx, nil); err != nil || len(res.Resources) != 3 {
		t.Fatalf("the user's resources = %+v, %v; want all three", res, err)
	}
}

// switchOff switches server off (or on) for the workspace at ws and tells
// the listeners, as the gateway package does.
func (g *catalogGateway) switchOff(ws, server string, off bool) {
	g.mu.Lock()
	m := maps.Clone(g.off[ws])
	if m == nil {
		m = map[string]string{}
	}
	if off {
		m[server] = "the MCP server " + server + " is switched off for this workspace"
	} else {
		delete(m, server)
	}
	g.off = maps.Clone(g.off)
	if g.off == nil {
		g.off = map[string]map[string]string{}
	}
	g.off[ws] = m
	fns := slices.Clone(g.fns)
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// listChanges opens a session with token whose resources and prompts
// list_changed are reported on the returned channels.
func (h *harness) listChanges(token string) (cs *sdk.ClientSession, resources, prompts chan struct{}) {
	h.t.Helper()
	resources, prompts = make(chan struct{}, 8), make(chan struct{}, 8)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { signal(resources) },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { signal(prompts) },
	})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:   h.srv.URL(),
		HTTPClient: &http.Client{Transport: &headerTransport{base: newTransport(h.t), header: http.Header{"Authorization": {"Bearer " + token}}}},
		MaxRetries: -1,
	}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolSessions})
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs, resources, prompts
}

func TestAServerSwitchedOffForAWorkspaceLeavesOnlyItsSessionsResourcesAndPrompts(t *testing.T) {
	gw := &catalogGateway{}
	gw.cats = []GatewayCatalog{{Server: "docs", Resources: []*sdk.Resource{{Name: "one", URI: GatewayResourceURI("docs", "x://one")}},
		Prompts: []*sdk.Prompt{{Name: "docs__ask"}}}}
	h := newHarness(t, withGateway(gw))
	a, b := h.create("a"), h.create("b")
	csA, resA, promptsA := h.listChanges(h.tokenOf(a.Path))
	csB, resB, promptsB := h.listChanges(h.tokenOf(b.Path))
	count := func(cs *sdk.ClientSession) (int, int) {
		r, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Resources), len(p.Prompts)
	}
	for _, cs := range []*sdk.ClientSession{csA, csB} {
		if r, p := count(cs); r != 1 || p != 1 {
			t.Fatalf("before: %d resources, %d prompts; want docs's one of each", r, p)
		}
	}
	for _, ch := range []chan struct{}{resA, resB, promptsA, promptsB} {
		for len(ch) > 0 {
			<-ch
		}
	}

	gw.switchOff(a.Path, "docs", true)
	waitNotified(t, resA, "resources/list_changed once docs was switched off for a")
	waitNotified(t, promptsA, "prompts/list_changed once docs was switched off for a")
	if r, p := count(csA); r != 0 || p != 0 {
		t.Fatalf("a with docs off: %d resources, %d prompts; want none", r, p)
	}
	select {
	case <-resB:
		t.Fatal("b was told its resources changed when docs was switched off for a")
	case <-promptsB:
		t.Fatal("b was told its prompts changed when docs was switched off for a")
	case <-time.After(500 * time.Millisecond):
	}
	if r, p := count(csB); r != 1 || p != 1 {
		t.Fatalf("b with docs off for a: %d resources, %d prompts; want docs's", r, p)
	}

	gw.switchOff(a.Path, "docs", false)
	waitNotified(t, resA, "resources/list_changed once docs was switched on again for a")
	if r, p := count(csA); r != 1 || p != 1 {
		t.Fatalf("a with docs on again: %d resources, %d prompts", r, p)
	}
}

func waitNotified(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}
