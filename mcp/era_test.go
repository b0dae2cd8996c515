package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/workspace"
)

// Both protocol eras on one server (era.go): the real go-sdk client of
// each, the default one (2026-07-28, stateless) and one that asks for
// 2025-11-25 (sessions), against the real server over real HTTP.

// eras are the clients' protocol versions: "" is the SDK client's
// default, the newest.
var eras = []struct{ name, version, want string }{
	{"stateless", "", ProtocolStateless},
	{"sessions", ProtocolSessions, ProtocolSessions},
}

// clientOf connects the SDK client of the protocol version (see eras)
// with token and, when wsPath is not "", X-Workspace-Path, and checks
// that it got the era it asked for.
func (h *harness) clientOf(version, token, wsPath string) *sdk.ClientSession {
	h.t.Helper()
	return h.clientWith(version, token, wsPath, nil)
}

// clientWith is clientOf with the client's options.
func (h *harness) clientWith(version, token, wsPath string, copts *sdk.ClientOptions) *sdk.ClientSession {
	h.t.Helper()
	return h.clientStreams(version, token, wsPath, copts, false)
}

// clientStreams is clientWith that, with standalone, opens a session's
// standalone event stream, on which notifications of no request come.
func (h *harness) clientStreams(version, token, wsPath string, copts *sdk.ClientOptions, standalone bool) *sdk.ClientSession {
	h.t.Helper()
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	var opts *sdk.ClientSessionOptions
	if version != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:             h.srv.URL(),
		HTTPClient:           &http.Client{Transport: &headerTransport{base: newTransport(h.t), header: hdr}},
		MaxRetries:           -1,
		DisableStandaloneSSE: !standalone,
	}, opts)
	if err != nil {
		h.t.Fatalf("connect (protocol %q): %v", version, err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

func TestEachEraGetsItsOwnProtocolAndOnlySessionsAreKept(t *testing.T) {
	h := newHarness(t)
	for _, era := range eras {
		cs := h.clientOf(era.version, h.token.Value(), "")
		if got := cs.InitializeResult().ProtocolVersion; got != era.want {
			t.Errorf("%s client: protocol %s, want %s", era.name, got, era.want)
		}
		if got := cs.InitializeResult().Instructions; got != instructions {
			t.Errorf("%s client: instructions %q", era.name, got)
		}
		var list ProjectList
		okJSON(t, call(t, cs, ToolProjectList, nil), &list)
		if len(list.Projects) != 1 {
			t.Errorf("%s client: project_list %+v", era.name, list)
		}
	}
	// The stateless client's requests are over; the session stays.
	if n := h.srv.Sessions(); n != 1 {
		t.Fatalf("%d sessions open, want 1 (the 2025-11-25 client's)", n)
	}
}

func TestAWorkspaceTokenActsOnItsWorkspaceOnlyInBothEras(t *testing.T) {
	h := newHarness(t)
	a, b := h.create("a"), h.create("b")
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			own := h.clientOf(era.version, h.tokenOf(a.Path), "")
			var st statusOutput
			okJSON(t, call(t, own, ToolGetStatus, nil), &st)
			if st.Path != a.Path {
				t.Fatalf("A's token without a header: status of %s, want %s", st.Path, a.Path)
			}
			other := h.clientOf(era.version, h.tokenOf(a.Path), b.Path)
			if code, msg := errCode(t, call(t, other, ToolGetStatus, nil)); code != workspace.CodeForbidden {
				t.Fatalf("A's token naming B: %s (%s), want forbidden", code, msg)
			}
			if code, msg := errCode(t, call(t, own, ToolProjectRemove, map[string]any{"path": h.project})); code != workspace.CodeForbidden {
				t.Fatalf("A's token removing the project: %s (%s), want forbidden", code, msg)
			}
			user := h.clientOf(era.version, h.token.Value(), b.Path)
			okJSON(t, call(t, user, ToolGetStatus, nil), &st)
			if st.Path != b.Path {
				t.Fatalf("the user naming B: status of %s", st.Path)
			}
			userNoHeader := h.clientOf(era.version, h.token.Value(), "")
			if code, msg := errCode(t, call(t, userNoHeader, ToolGetStatus, nil)); code != workspace.CodeInvalidInput || !strings.Contains(msg, WorkspaceHeader) {
				t.Fatalf("the user without a header: %s (%s), want invalid-input naming the header", code, msg)
			}
		})
	}
	if len(h.mgr.Projects()) != 1 {
		t.Fatal("the project was removed")
	}
}

// statelessPost posts a tools/call of tool of the stateless era with
// token, with the headers that era wants.
func (h *harness) statelessPost(token, tool string) *http.Response {
	h.t.Helper()
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+token)
	hdr.Set(protocolHeader, ProtocolStateless)
	hdr.Set("Mcp-Method", "tools/call")
	hdr.Set("Mcp-Name", tool)
	return h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(statelessCall(tool)))
}

// statelessCall is a tools/call of the stateless era, whole.
func statelessCall(tool string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"` + metaProtocolVersion + `":"` + ProtocolStateless + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
}

func TestEveryStatelessRequestShowsItsOwnToken(t *testing.T) {
	h := newHarness(t)
	a := h.create("a")
	if code := h.statelessPost(h.token.Value(), ToolProjectList).StatusCode; code != http.StatusOK {
		t.Fatalf("a stateless call with the master token: HTTP %d", code)
	}
	if code := h.statelessPost(h.tokenOf(a.Path), ToolGetStatus).StatusCode; code != http.StatusOK {
		t.Fatalf("a stateless call with A's token: HTTP %d", code)
	}
	for name, token := range map[string]string{"no token": "", "a wrong token": "x" + h.token.Value(), "a made-up workspace token": h.tokenOf(a.Path)[:20]} {
		resp := h.statelessPost(token, ToolProjectList)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("a stateless call with %s: HTTP %d, want 401 with WWW-Authenticate", name, resp.StatusCode)
		}
	}

	// A client whose token goes bad between requests: the next request is
	// refused, whatever came before.
	tokA := h.tokenOf(a.Path)
	if err := h.mgr.Delete(context.Background(), a.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code := h.statelessPost(tokA, ToolGetStatus).StatusCode; code != http.StatusUnauthorized {
		t.Fatalf("a stateless call with the deleted A's token: HTTP %d, want 401", code)
	}
}

func TestARequestDeclaringTheStatelessEraBadlyGetsAClearError(t *testing.T) {
	h := newHarness(t)
	// Each is answered 400 with a JSON-RPC error saying what is wrong.
	cases := []struct {
		name, header, body, want string
		// named: with the Mcp-Method and Mcp-Name headers.
		named bool
	}{
		{"_meta without the header", "", statelessCall(ToolProjectList), "header is required", false},
		{"the header without _meta", ProtocolStateless, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, metaProtocolVersion, false},
		{"header and _meta that differ", "2026-08-01", statelessCall(ToolProjectList), "does not match", false},
		{"initialize", ProtocolStateless, initializeBody, "_meta", false},
		{"no Mcp-Method", ProtocolStateless, statelessCall(ToolProjectList), "Mcp-Method", false},
		{"a version the server does not know", "2027-01-01", strings.ReplaceAll(statelessCall(ToolProjectList), ProtocolStateless, "2027-01-01"), `"supported":["2026-07-28","2025-11-25"`, true},
	}
	for _, c := range cases {
		hdr := mcpHeaders()
		hdr.Set("Authorization", "Bearer "+h.token.Value())
		if c.header != "" {
			hdr.Set(protocolHeader, c.header)
		}
		if c.named {
			hdr.Set("Mcp-Method", "tools/call")
			hdr.Set("Mcp-Name", ToolProjectList)
		}
		resp := h.rawRequest(http.MethodPost, Path, hdr, strings.NewReader(c.body))
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), c.want) {
			t.Errorf("%s: HTTP %d %s, want 400 saying %q", c.name, resp.StatusCode, body.String(), c.want)
		}
	}
	hdr := mcpHeaders()
	hdr.Set("Authorization", "Bearer "+h.token.Value())
	hdr.Set(protocolHeader, ProtocolStateless)
	if resp := h.rawRequest(http.MethodGet, Path, hdr, nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("a stateless GET: HTTP %d, Allow %q, want 405 and POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if n := h.srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions open after stateless requests", n)
	}
}

func TestRateLimitsAndAuditAreTheSameInBothEras(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RateLimit, o.Burst = 0.001, 4 })
	a := h.create("a")
	old := h.clientOf(ProtocolSessions, h.tokenOf(a.Path), "")
	fresh := h.clientOf("", h.tokenOf(a.Path), "")
	// One bucket per caller and tool, whatever the era of its requests.
	for _, cs := range []*sdk.ClientSession{old, fresh, old, fresh} {
		okJSON(t, call(t, cs, ToolGetStatus, nil), new(statusOutput))
	}
	var msgs []string
	for _, cs := range []*sdk.ClientSession{old, fresh} {
		code, msg := errCode(t, call(t, cs, ToolGetStatus, nil))
		if code != workspace.CodeRateLimited {
			t.Fatalf("past the burst: %s (%s), want rate-limited", code, msg)
		}
		msgs = append(msgs, msg)
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("the refusals differ by era:\n%s\n%s", msgs[0], msgs[1])
	}

	data, _ := os.ReadFile(h.audit)
	lines := h.auditEntries(t)
	if len(lines) != 6 {
		t.Fatalf("%d audit lines, want 6:\n%s", len(lines), data)
	}
	type line struct{ caller, workspace, tool, outcome string }
	got := make([]line, len(lines))
	for i, e := range lines {
		got[i] = line{e.Caller, e.Workspace, e.Tool, e.Outcome}
	}
	okLine, limited := line{a.Path, a.Path, ToolGetStatus, "ok"}, line{a.Path, a.Path, ToolGetStatus, string(workspace.CodeRateLimited)}
	if want := []line{okLine, okLine, okLine, okLine, limited, limited}; !slices.Equal(got, want) {
		t.Fatalf("audit lines\n got %+v\nwant %+v", got, want)
	}
}

// listens counts the stateless era's subscriptions/listen streams open.
func (h *harness) listens() int {
	h.srv.places.mu.Lock()
	defer h.srv.places.mu.Unlock()
	return len(h.srv.places.listens)
}

func TestAStatelessClientSeesItsWorkspacesGatewayToolsAndHearsOfChanges(t *testing.T) {
	g := newFakeGateway(t)
	g.add("fs", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a, b := h.create("a"), h.create("b")
	changedA := make(chan struct{}, 8)
	csA := h.clientWith("", h.tokenOf(a.Path), "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changedA <- struct{}{}:
			default:
			}
		},
	})
	csB := h.clientOf("", h.tokenOf(b.Path), "")
	for _, cs := range []*sdk.ClientSession{csA, csB} {
		waitFor(t, "fs__echo listed", func() bool { return slices.Contains(toolNames(t, cs), "fs__echo") })
	}
	waitFor(t, "a's listen stream", func() bool { return h.listens() == 1 })
	for len(changedA) > 0 {
		<-changedA
	}

	g.switchOff(a.Path, "fs", true)
	waitChanged(t, changedA, "fs was switched off for a")
	if names := toolNames(t, csA); slices.Contains(names, "fs__echo") || !slices.Contains(names, ToolProjectList) {
		t.Fatalf("a's tools with fs off: %v", names)
	}
	wantForbiddenBeforeGateway(t, g, csA, "a's call of fs__echo", "fs__echo", map[string]any{"text": "x"}, "switched off for this workspace")
	if !slices.Contains(toolNames(t, csB), "fs__echo") {
		t.Fatal("b lost fs__echo when it was switched off for a")
	}
	var out echoOut
	okJSON(t, call(t, csB, "fs__echo", map[string]any{"text": "b"}), &out)
	if n := h.srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions open, want none: a listen stream is no session", n)
	}

	// A's listen stream ends with its workspace, as a session would.
	if err := h.mgr.Delete(context.Background(), a.Path, workspace.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's listen stream to end with a", func() bool { return h.listens() == 0 })
}

func TestTelemetryIsTheSameInBothEras(t *testing.T) {
	h, spans, _ := telemetryHarness(t)
	ws := h.create("traced")
	for _, era := range eras {
		call(t, h.clientOf(era.version, h.tokenOf(ws.Path), ""), ToolGetStatus, nil)
		call(t, h.clientOf(era.version, h.token.Value(), ""), ToolGetStatus, nil)
	}
	var got []map[string]string
	for _, s := range spans.GetSpans() {
		if s.Name == "tools/call "+ToolGetStatus {
			got = append(got, spanAttrs(s))
		}
	}
	if len(got) != 4 {
		t.Fatalf("spans of %s: %v, want 4", ToolGetStatus, got)
	}
	for i := range 2 {
		if !maps.Equal(got[i], got[i+2]) {
			t.Errorf("the spans of one call differ by era:\n%v\n%v", got[i], got[i+2])
		}
	}
	for _, name := range []string{"server/discover", "initialize"} {
		if _, ok := findSpan(spans.GetSpans(), name); !ok {
			t.Errorf("no span of %s among %d spans", name, len(spans.GetSpans()))
		}
	}
}

// waitingClients is a server with the call timeout whose gateway server
// fs has the tool wait (p tells when it starts and ends), and a client
// of each era (see eras) for the workspace a, once it lists fs__wait.
func waitingClients(t *testing.T, timeout time.Duration) (p *probe, clients []*sdk.ClientSession) {
	g := newFakeGateway(t)
	p = newProbe()
	g.add("fs", p.fsTools)
	h := newHarness(t, withGateway(g), func(o *Options) { o.CallTimeout = timeout })
	a := h.create("a")
	for _, era := range eras {
		cs := h.clientOf(era.version, h.tokenOf(a.Path), "")
		waitFor(t, "fs__wait listed", func() bool { return slices.Contains(toolNames(t, cs), "fs__wait") })
		clients = append(clients, cs)
	}
	return p, clients
}

func TestCallTimeoutsAreTheSameInBothEras(t *testing.T) {
	p, clients := waitingClients(t, 500*time.Millisecond)
	for i, era := range eras {
		cs := clients[i]
		code, msg := errCode(t, call(t, cs, "fs__wait", nil))
		if code != workspace.CodeTimeout || !strings.Contains(msg, `"fs"`) {
			t.Fatalf("%s: a call past the timeout: %s %q", era.name, code, msg)
		}
		select {
		case <-p.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the timeout did not reach the server's handler", era.name)
		}
		<-p.started // that call's
	}
}

// The client gives up: the call ends at the server too (a
// notifications/cancelled in a session, a dropped POST without), long
// before its call timeout.
func TestCancellationsAreTheSameInBothEras(t *testing.T) {
	p, clients := waitingClients(t, 30*time.Second)
	for i, era := range eras {
		cs := clients[i]
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__wait", Arguments: map[string]any{}})
		}()
		select {
		case <-p.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the call did not start", era.name)
		}
		cancel()
		select {
		case <-p.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the client's cancellation did not reach the server's handler (its call timeout is 30 s)", era.name)
		}
		<-done
	}
}

// subGateway is a fakeGateway whose servers' resources take
// subscriptions: it records each (on or off) and can send an update.
type subGateway struct {
	*fakeGateway
	subs    chan string // "on|off <workspace> <uri>"
	mu      sync.Mutex
	updated func(string)
}

func (g *subGateway) Subscribe(_ context.Context, ws, uri string, on bool) error {
	g.subs <- map[bool]string{true: "on", false: "off"}[on] + " " + ws + " " + uri
	return nil
}

func (g *subGateway) OnResourceUpdated(fn func(string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.updated = fn
}

func (g *subGateway) update(uri string) {
	g.mu.Lock()
	fn := g.updated
	g.mu.Unlock()
	fn(uri)
}

func awaitString(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
	return ""
}

// A stateless client subscribes with a subscriptions/listen, which the
// SDK serves past the middleware: it gets the checks, the upstream
// subscription (ended with the listen) and the audit lines a session's
// resources/subscribe gets.
func TestASubscriptionIsCheckedPassedOnAndEndedInBothEras(t *testing.T) {
	g := &subGateway{fakeGateway: newFakeGateway(t), subs: make(chan string, 8)}
	g.add("fs", newProbe().fsTools)
	h := newHarness(t, withGateway(g))
	a, b := h.create("a"), h.create("b")
	g.switchOff(a.Path, "fs", true)
	uri := GatewayResourceURI("fs", "file:///doc.md")
	refused, on, off := auditLine{a.Path, "resources/subscribe", "fs", string(workspace.CodeForbidden)},
		auditLine{b.Path, "resources/subscribe", "fs", "ok"}, auditLine{b.Path, "resources/unsubscribe", "fs", "ok"}
	var want []auditLine
	for _, era := range eras {
		// The go-sdk client's stateless Subscribe opens the listen and
		// returns: only a session's client hears the refusal. A refused
		// listen ends at once, and is audited.
		err := h.clientOf(era.version, h.tokenOf(a.Path), "").Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri})
		if era.version != "" && (err == nil || !strings.Contains(err.Error(), "switched off for this workspace")) {
			t.Fatalf("%s: a subscribed to a resource of fs, switched off for it: %v, want forbidden", era.name, err)
		}
		want = append(want, refused)
		waitFor(t, "a's refusal audited", func() bool { return slices.Equal(h.resourceAudit(t), want) })
		waitFor(t, "a's refused listen to end", func() bool { return h.listens() == 0 })
		select {
		case got := <-g.subs:
			t.Fatalf("%s: a's refused subscription reached the gateway: %s", era.name, got)
		default:
		}

		updated := make(chan string, 8)
		csB := h.clientStreams(era.version, h.tokenOf(b.Path), "", &sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
				select {
				case updated <- r.Params.URI:
				default:
				}
			},
		}, true)
		subscribed := make(chan error, 1)
		// A stateless Subscribe lasts as long as its listen.
		go func() { subscribed <- csB.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}) }()
		if got := awaitString(t, g.subs, "subscription upstream"); got != "on "+b.Path+" "+uri {
			t.Fatalf("%s: upstream %q, want b's subscription", era.name, got)
		}
		// The SDK records the subscription after the middleware passed it.
		waitFor(t, era.name+": the update to reach b", func() bool {
			g.update(uri)
			select {
			case got := <-updated:
				return got == uri
			case <-time.After(100 * time.Millisecond):
				return false
			}
		})
		if err := csB.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("%s: unsubscribe: %v", era.name, err)
		}
		if got := awaitString(t, g.subs, "the subscription's end upstream"); got != "off "+b.Path+" "+uri {
			t.Fatalf("%s: upstream %q, want b's subscription ended", era.name, got)
		}
		if err := <-subscribed; err != nil {
			t.Fatalf("%s: subscribe: %v", era.name, err)
		}
		// The unsubscribe is audited as its call returns, which may be
		// after the gateway saw it end.
		want = append(want, on, off)
		waitFor(t, era.name+": the subscription and its end audited", func() bool { return len(h.resourceAudit(t)) >= len(want) })
		if got := h.resourceAudit(t); !slices.Equal(got, want) {
			t.Fatalf("%s: audit lines\n got %+v\nwant %+v", era.name, got, want)
		}
	}
}

type auditLine struct{ workspace, tool, server, outcome string }

// resourceAudit are the audit lines of resources/ requests so far.
func (h *harness) resourceAudit(t *testing.T) []auditLine {
	t.Helper()
	var got []auditLine
	for _, e := range h.auditEntries(t) {
		if strings.HasPrefix(e.Tool, "resources/") {
			got = append(got, auditLine{e.Workspace, e.Tool, e.Server, e.Outcome})
		}
	}
	return got
}

// auditEntries are the audit log's lines so far.
func (h *harness) auditEntries(t *testing.T) []auditEntry {
	t.Helper()
	data, err := os.ReadFile(h.audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines []auditEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e auditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, e)
	}
	return lines
}
