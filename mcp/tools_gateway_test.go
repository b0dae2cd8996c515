package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// The gateway's tools on the app-wide server (issue 14): real go-sdk
// servers behind a Gateway in this process, the real server over real
// HTTP, the real SDK client, real git.

type echoIn struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Token string `json:"token,omitempty" jsonschema:"a secret the tool needs"`
}

type echoOut struct {
	Text string `json:"text"`
}

// probe reports what the "wait" tool's handler saw.
type probe struct {
	started, cancelled chan struct{}
}

func newProbe() *probe {
	return &probe{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8)}
}

// fsTools adds echo, wait (until cancelled), fail (the tool's own
// failure) and read (any arguments) to srv.
func (p *probe) fsTools(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echoes text", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, echoOut, error) {
			return nil, echoOut{Text: in.Text}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		p.started <- struct{}{}
		<-ctx.Done()
		p.cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "boom: the file is locked"}}}, nil, nil
	})
	srv.AddTool(&sdk.Tool{Name: "read", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "read"}}}, nil
	})
}

func toolNames(t testing.TB, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func waitChanged(t testing.TB, changed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", what)
	}
}

func TestGatewayToolsAreOfferedAsServerToolToEveryCaller(t *testing.T) {
	g := newFakeGateway(t)
	g.add("fs", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a, b := h.create("a"), h.create("b")
	tokA := h.tokenOf(a.Path)

	for _, cs := range []*sdk.ClientSession{h.session(""), h.sessionAs(tokA, "")} {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		echo := findTool(t, res.Tools, "fs__echo")
		findTool(t, res.Tools, ToolGetStatus)
		if echo.Description != "echoes text" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
			t.Fatalf("fs__echo lost its description or annotations: %+v", echo)
		}
		in := schemaMap(t, echo.InputSchema)
		if _, ok := in["properties"].(map[string]any)["text"]; !ok {
			t.Fatalf("fs__echo's input schema lost its properties: %v", in)
		}
		// The server's output schema, or CodeHydra's error shape.
		validate(t, echo.OutputSchema, map[string]any{"text": "x"})
		validate(t, echo.OutputSchema, map[string]any{"error": map[string]any{"code": "forbidden", "message": "m"}})
		var out echoOut
		okJSON(t, call(t, cs, "fs__echo", map[string]any{"text": "hi"}), &out)
		if out.Text != "hi" {
			t.Fatalf("fs__echo answered %+v", out)
		}
	}
	// A workspace's token naming another workspace is refused as for
	// CodeHydra's own tools, before the gateway.
	if code, _ := errCode(t, call(t, h.sessionAs(tokA, b.Path), "fs__echo", map[string]any{"text": "x"})); code != workspace.CodeForbidden {
		t.Fatalf("a workspace token naming another workspace: %s, want forbidden", code)
	}
	got := g.reached()
	if len(got) != 2 || got[0].ws != "" || got[1].ws != a.Path || got[1].tool != "fs__echo" {
		t.Fatalf("calls that reached the gateway: %+v; want the user's with no workspace, then a's with its own", got)
	}
}

func TestGatewayToolListChangesReachClients(t *testing.T) {
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	late := g.add("late", func(srv *sdk.Server) {
		sdk.AddTool(srv, &sdk.Tool{Name: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return textResult("pong"), nil, nil
		})
	})
	late.stopped = true
	h := newHarness(t, withGateway(g))
	changed := make(chan struct{}, 1)
	cs := h.sessionNotified(h.token.Value(), "", changed)
	if names := toolNames(t, cs); !slices.Contains(names, "fs__echo") || slices.Contains(names, "late__ping") {
		t.Fatalf("tools before late started: %v", names)
	}

	// A server that starts later shows its tools once it runs.
	g.set(func() { late.stopped = false })
	waitChanged(t, changed, "a server started")
	waitFor(t, "late__ping listed", func() bool { return slices.Contains(toolNames(t, cs), "late__ping") })
	if got := text(t, call(t, cs, "late__ping", nil)); got != "pong" {
		t.Fatalf("late__ping answered %q", got)
	}

	// A server's own notifications/tools/list_changed reaches the client.
	sdk.AddTool(fs.srv, &sdk.Tool{Name: "grown"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return textResult("grown"), nil, nil
	})
	waitChanged(t, changed, "a server added a tool")
	waitFor(t, "fs__grown listed", func() bool { return slices.Contains(toolNames(t, cs), "fs__grown") })

	// A server that stops takes its tools away.
	g.set(func() { late.stopped = true })
	waitChanged(t, changed, "a server stopped")
	waitFor(t, "late__ping gone", func() bool { return !slices.Contains(toolNames(t, cs), "late__ping") })
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "late__ping", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatal("a tool of a stopped server still answered")
	}
}

func TestToolsListNeverWaitsForASlowGateway(t *testing.T) {
	g := newFakeGateway(t)
	g.add("fs", newProbe().fsTools)
	g.block = make(chan struct{})
	h := newHarness(t, withGateway(g))
	changed := make(chan struct{}, 1)
	cs := h.sessionNotified(h.token.Value(), "", changed)

	start := time.Now()
	names := toolNames(t, cs)
	if took := time.Since(start); took > gatewayListWait+2*time.Second {
		t.Fatalf("tools/list took %s while the gateway hung", took)
	}
	if !slices.Contains(names, ToolProjectList) || slices.Contains(names, "fs__echo") {
		t.Fatalf("tools while the gateway hangs: %v", names)
	}
	call(t, cs, ToolProjectList, nil) // the rest keeps serving

	g.mu.Lock()
	close(g.block)
	g.mu.Unlock()
	waitChanged(t, changed, "the gateway answered")
	waitFor(t, "fs__echo listed", func() bool { return slices.Contains(toolNames(t, cs), "fs__echo") })
}

func TestAClientsCancellationOfAGatewayCallReachesTheServer(t *testing.T) {
	g := newFakeGateway(t)
	p := newProbe()
	g.add("fs", p.fsTools)
	h := newHarness(t, withGateway(g)) // the default timeout: 30 s
	a := h.create("a")
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__wait", Arguments: map[string]any{}})
	}()
	<-p.started
	cancel()
	select {
	case <-p.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's cancellation did not reach the server's handler")
	}
	<-done
}

func TestGatewayCallsAreRateLimitedAndTimedOut(t *testing.T) {
	g := newFakeGateway(t)
	p := newProbe()
	g.add("fs", p.fsTools)
	h := newHarness(t, withGateway(g), func(o *Options) { o.RateLimit, o.Burst, o.CallTimeout = 0.001, 2, 500*time.Millisecond })
	a := h.create("a")
	cs := h.sessionAs(h.tokenOf(a.Path), "")

	// The call timeout reaches the server's handler.
	code, msg := errCode(t, call(t, cs, "fs__wait", nil))
	if code != workspace.CodeTimeout || !strings.Contains(msg, `"fs"`) {
		t.Fatalf("a call past the timeout: %s %q", code, msg)
	}
	select {
	case <-p.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the timeout did not reach the server's handler")
	}
	call(t, cs, "fs__echo", map[string]any{"text": "uses fs__echo's own bucket"})
	call(t, cs, "fs__wait", nil) // the second of the burst of 2: timeout again

	// The rate limit: per caller and tool, before the gateway.
	before := len(g.reached())
	code, _ = errCode(t, call(t, cs, "fs__wait", nil))
	if code != workspace.CodeRateLimited || len(g.reached()) != before {
		t.Fatalf("a call over the limit: %s, and it reached the gateway: %v", code, len(g.reached()) != before)
	}
	var out echoOut
	okJSON(t, call(t, cs, "fs__echo", map[string]any{"text": "other tool"}), &out)
}

func TestGatewayFailuresAreClearAndTheAuditNamesTheServerNeverAValue(t *testing.T) {
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	other := g.add("other", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a := h.create("a")
	cs := h.sessionAs(h.tokenOf(a.Path), "")
	const secret = "s3cret-argument-value-7f1c"

	call(t, cs, "fs__echo", map[string]any{"text": "hi", "token": secret})
	// A tool's own failure goes back as its server made it.
	res := call(t, cs, "fs__fail", nil)
	if !res.IsError || text(t, res) != "boom: the file is locked" {
		t.Fatalf("the tool's own failure was changed: %+v", res)
	}
	// A server that is down: a clear error; the rest serves.
	g.set(func() { fs.down = true })
	code, msg := errCode(t, call(t, cs, "fs__echo", map[string]any{"text": "x", "token": secret}))
	if code != workspace.CodeInternal || !strings.Contains(msg, `MCP server "fs" is unavailable`) || !strings.Contains(msg, "process exited") {
		t.Fatalf("a call of a server that is down: %s %q", code, msg)
	}
	var out echoOut
	okJSON(t, call(t, cs, "other__echo", map[string]any{"text": "still"}), &out)
	call(t, cs, ToolGetStatus, nil)
	_ = other

	data, err := os.ReadFile(h.audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) || strings.Contains(h.logs.String(), secret) {
		t.Fatal("an argument value reached the audit log or the log")
	}
	type line struct{ caller, ws, tool, server, outcome, args string }
	var got []line
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e auditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, line{e.Caller, e.Workspace, e.Tool, e.Server, e.Outcome, strings.Join(e.Args, ",")})
	}
	want := []line{
		{a.Path, a.Path, "fs__echo", "fs", "ok", "text,token"},
		{a.Path, a.Path, "fs__fail", "fs", "tool-error", ""},
		{a.Path, a.Path, "fs__echo", "fs", "internal-error", "text,token"},
		{a.Path, a.Path, "other__echo", "other", "ok", "text"},
		{a.Path, a.Path, ToolGetStatus, "", "ok", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit lines\n got %v\nwant %v", got, want)
	}
}

// staticGateway offers a fixed list and answers every call with "ok".
type staticGateway struct {
	noCatalog
	tools []GatewayTool
	cats  []GatewayCatalog
}

func (s staticGateway) Catalogs() []GatewayCatalog { return s.cats }

func (s staticGateway) Tools(context.Context) []GatewayTool { return s.tools }
func (s staticGateway) OnToolsChanged(func())               {}
func (s staticGateway) Off(string) map[string]string        { return nil }
func (s staticGateway) Call(context.Context, string, string, json.RawMessage) (*sdk.CallToolResult, error) {
	return textResult("gateway"), nil
}

func TestGatewayToolsNeverTakeCodeHydrasNamesNorBreakTheServer(t *testing.T) {
	obj := map[string]any{"type": "object"}
	gw := staticGateway{tools: []GatewayTool{
		{Server: "x", Tool: &sdk.Tool{Name: ToolGetStatus, InputSchema: obj}},
		{Server: "x", Tool: &sdk.Tool{Name: "noprefix", InputSchema: obj}},
		{Server: "x", Tool: &sdk.Tool{Name: "x__notobject", InputSchema: map[string]any{"type": "string"}}},
		{Server: "x", Tool: &sdk.Tool{Name: "x__nil"}},
		{Server: "x"},
		{Server: "x", Tool: &sdk.Tool{Name: "x__ok", InputSchema: obj}},
		{Server: "y", Tool: &sdk.Tool{Name: "x__ok", InputSchema: obj}},
	}}
	h := newHarness(t, withGateway(gw))
	a := h.create("a")
	cs := h.session(a.Path)
	var extra []string
	for _, n := range toolNames(t, cs) {
		if strings.Contains(n, "__") || n == "noprefix" {
			extra = append(extra, n)
		}
	}
	if !slices.Equal(extra, []string{"x__nil", "x__ok"}) {
		t.Fatalf("gateway tools offered: %v, want x__nil (an object schema supplied) and x__ok once", extra)
	}
	var st statusOutput
	okJSON(t, call(t, cs, ToolGetStatus, nil), &st)
	if st.Path != a.Path {
		t.Fatalf("workspace_get_status is no longer CodeHydra's: %+v", st)
	}
	if got := text(t, call(t, cs, "x__ok", nil)); got != "gateway" {
		t.Fatalf("x__ok answered %q", got)
	}
}

func TestConfinedGatewayToolsRefuseEveryPathOutsideTheCallersWorkspace(t *testing.T) {
	g := newFakeGateway(t)
	fs := g.add("fs", newProbe().fsTools)
	fs.confine = true
	wsfs := g.add("wsfs", newProbe().fsTools)
	wsfs.perWorkspace = true
	h := newHarness(t, withGateway(g))
	t.Setenv("HOME", t.TempDir())
	a, b := h.create("a"), h.create("b")
	if err := os.Symlink("/etc", a.Path+"/escape"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(a.Path+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	cs := h.sessionAs(h.tokenOf(a.Path), "")

	refused := map[string]any{
		"an absolute path outside":           map[string]any{"path": "/etc/passwd"},
		"up out of the workspace":            map[string]any{"path": a.Path + "/../other"},
		"a symlink inside pointing out":      map[string]any{"path": a.Path + "/escape/passwd"},
		"up from a symlink's target":         map[string]any{"path": a.Path + "/escape/../.."},
		"up past a missing folder":           map[string]any{"path": a.Path + "/missing/../../b"},
		"another workspace":                  map[string]any{"path": b.Path + "/README.md"},
		"a nested argument":                  map[string]any{"opts": map[string]any{"list": []any{"ok", 3, "/etc"}}},
		"a file URI":                         map[string]any{"uri": "file:///etc"},
		"a file URI of another host":         map[string]any{"uri": "file://example.com" + a.Path},
		"the home folder":                    map[string]any{"path": "~/x"},
		"another user's home":                map[string]any{"path": "~root/x"},
		"an object key":                      map[string]any{"files": map[string]any{"/etc/cron.d/x": "data"}},
		"the parent of the workspace itself": map[string]any{"path": a.Path + "/.."},
	}
	for name, args := range refused {
		wantForbiddenBeforeGateway(t, g, cs, name, "fs__read", args, "confined to your workspace")
	}
	allowed := map[string]any{
		"the workspace itself":     map[string]any{"path": a.Path},
		"a file in it":             map[string]any{"path": a.Path + "/README.md"},
		"a new file, with ..":      map[string]any{"path": a.Path + "/sub/../new-file"},
		"a missing folder":         map[string]any{"path": a.Path + "/x/y/z"},
		"a file URI inside":        map[string]any{"uri": "file://" + a.Path + "/README.md"},
		"relative paths and text":  map[string]any{"path": "sub/file", "text": "see /etc/passwd", "n": 3, "b": true},
		"nested inside":            map[string]any{"opts": map[string]any{"list": []any{a.Path + "/sub"}}},
		"no arguments":             map[string]any{},
		"a symlink's name, inside": map[string]any{"path": a.Path + "/sub/../README.md"},
	}
	for name, args := range allowed {
		if res := call(t, cs, "fs__read", args); res.IsError || text(t, res) != "read" {
			t.Errorf("%s: refused: %s", name, text(t, res))
		}
	}

	// The user's token names no workspace: refused for a confined server,
	// invalid for a per-workspace one; a workspace's token reaches its own.
	user := h.session("")
	if code, _ := errCode(t, call(t, user, "fs__read", map[string]any{"path": a.Path})); code != workspace.CodeForbidden {
		t.Fatalf("the user's token on a confined server: %s, want forbidden", code)
	}
	if code, msg := errCode(t, call(t, user, "wsfs__read", nil)); code != workspace.CodeInvalidInput || !strings.Contains(msg, "workspace's token") {
		t.Fatalf("the user's token on a per-workspace server: %s %q", code, msg)
	}
	before := len(g.reached())
	call(t, cs, "wsfs__read", nil)
	if got := g.reached(); len(got) != before+1 || got[before].ws != a.Path {
		t.Fatalf("a per-workspace call reached the gateway as %+v, want a's", got[before:])
	}
}

func TestAServerSwitchedOffForAWorkspaceLeavesOnlyItsSessionsLists(t *testing.T) {
	g := newFakeGateway(t)
	g.add("fs", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a, b := h.create("a"), h.create("b")
	changedA, changedB := make(chan struct{}, 4), make(chan struct{}, 4)
	csA := h.sessionNotified(h.tokenOf(a.Path), "", changedA)
	csB := h.sessionNotified(h.tokenOf(b.Path), "", changedB)
	for _, cs := range []*sdk.ClientSession{csA, csB} {
		waitFor(t, "fs__echo listed", func() bool { return slices.Contains(toolNames(t, cs), "fs__echo") })
	}
	for len(changedA)+len(changedB) > 0 {
		select {
		case <-changedA:
		case <-changedB:
		}
	}

	g.switchOff(a.Path, "fs", true)
	waitChanged(t, changedA, "fs was switched off for a")
	if names := toolNames(t, csA); slices.Contains(names, "fs__echo") || !slices.Contains(names, ToolProjectList) {
		t.Fatalf("a's tools with fs off: %v", names)
	}
	before := len(g.reached())
	code, msg := errCode(t, call(t, csA, "fs__echo", map[string]any{"text": "x"}))
	if code != workspace.CodeForbidden || !strings.Contains(msg, "switched off for this workspace") {
		t.Fatalf("a's call of fs__echo: %s %q, want forbidden saying fs is off for it", code, msg)
	}
	if len(g.reached()) != before {
		t.Fatal("a's call of a server off for it reached the gateway")
	}
	// b's list did not change: no notification, and fs still answers it.
	select {
	case <-changedB:
		t.Fatal("b was told its tools changed when fs was switched off for a")
	case <-time.After(500 * time.Millisecond):
	}
	if !slices.Contains(toolNames(t, csB), "fs__echo") {
		t.Fatal("b lost fs__echo when it was switched off for a")
	}
	var out echoOut
	okJSON(t, call(t, csB, "fs__echo", map[string]any{"text": "b"}), &out)

	g.switchOff(a.Path, "fs", false)
	waitChanged(t, changedA, "fs was switched on again for a")
	if !slices.Contains(toolNames(t, csA), "fs__echo") {
		t.Fatal("fs__echo did not come back for a")
	}
	select {
	case <-changedB:
		t.Fatal("b was told its tools changed when fs came back for a")
	case <-time.After(500 * time.Millisecond):
	}
}
