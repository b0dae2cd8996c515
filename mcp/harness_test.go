package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/tasks"
	"codehydra/workspace"
)

// isolateGit keeps the user's and the system's git configuration out of
// the test and gives commits an identity.
func isolateGit(t testing.TB) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	// XDG dirs: nothing the manager or the server writes may land in $HOME.
	base := t.TempDir()
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"} {
		t.Setenv(v, filepath.Join(base, strings.ToLower(v)))
	}
}

// harness is a real server over real HTTP in front of a real
// workspace.Manager on a real temp repository.
type harness struct {
	t       testing.TB
	mgr     *workspace.Manager
	srv     *Server
	token   *Token
	project string
	audit   string
	logs    *testenv.SyncBuffer
	outputs *outputChecker
}

type harnessOption func(*Options)

func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	return newHarnessWith(t, nil, opts...)
}

// newHarnessWith is newHarness with agents for the manager.
func newHarnessWith(t testing.TB, agents workspace.Agents, opts ...harnessOption) *harness {
	t.Helper()
	isolateGit(t)
	project := testenv.GitRepo(t, "proj")
	mgr := workspace.NewManager(workspace.Options{Projects: []string{project}, WorktreeRoot: t.TempDir(), Agents: agents})
	if err := mgr.Load(context.Background()); err != nil {
		t.Fatalf("load manager: %v", err)
	}
	return startHarness(t, mgr, project, opts...)
}

func startHarness(t testing.TB, ws Workspaces, project string, opts ...harnessOption) *harness {
	t.Helper()
	token, err := LoadOrCreateToken(filepath.Join(t.TempDir(), "state", "token"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	runs := tasks.NewRuns(tasks.RunsOptions{Dir: t.TempDir(), Grace: time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := runs.Close(ctx); err != nil {
			t.Errorf("stop the background runs: %v", err)
		}
	})
	o := Options{
		Token:      token,
		Workspaces: ws,
		AuditPath:  filepath.Join(t.TempDir(), "audit.jsonl"),
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Runs:       runs,
	}
	if m, ok := ws.(*workspace.Manager); ok {
		o.Subscribe = m.Subscribe
	}
	for _, f := range opts {
		f(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, token: token, project: project, audit: o.AuditPath, logs: logs, outputs: serveForTest(t, srv)}
	if m, ok := ws.(*workspace.Manager); ok {
		h.mgr = m
	}
	return h
}

// serveForTest checks the outputs of srv's tools (checkOutputs), serves
// it on its port and shuts it down at the end of the test.
func serveForTest(t testing.TB, srv *Server) *outputChecker {
	t.Helper()
	outputs := checkOutputs(t, srv)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return outputs
}

// create makes a workspace through the manager.
func (h *harness) create(name string) workspace.Workspace {
	h.t.Helper()
	ws, err := h.mgr.Create(context.Background(), workspace.CreateOptions{ProjectPath: h.project, Name: name})
	if err != nil {
		h.t.Fatalf("create workspace %s: %v", name, err)
	}
	return ws
}

// waitBackground waits until the work the server runs after its answers
// (a workspace_delete's delete) has returned.
func (h *harness) waitBackground() {
	h.t.Helper()
	done := make(chan struct{})
	go func() { h.srv.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		h.t.Fatal("the server's background work did not end within 15 s")
	}
}

// session opens an MCP session whose requests carry the token and, when
// wsPath is not "", X-Workspace-Path. It is closed at the end of the test.
func (h *harness) session(wsPath string) *sdk.ClientSession {
	h.t.Helper()
	hdr := http.Header{}
	if wsPath != "" {
		hdr.Set(WorkspaceHeader, wsPath)
	}
	return h.sessionWith(&headerTransport{base: newTransport(h.t), header: h.authHeader(hdr)})
}

func (h *harness) authHeader(hdr http.Header) http.Header {
	hdr.Set("Authorization", "Bearer "+h.token.Value())
	return hdr
}

func (h *harness) sessionWith(rt http.RoundTripper) *sdk.ClientSession {
	h.t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{
		Endpoint:             h.srv.URL(),
		HTTPClient:           &http.Client{Transport: rt},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolSessions})
	if err != nil {
		h.t.Fatalf("connect: %v", err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// newTransport is a transport of the test's own whose idle connections are
// closed at the end, so that goroutine counts come back down.
func newTransport(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// call calls a tool and returns the raw result.
func call(t testing.TB, cs *sdk.ClientSession, tool string, args any) *sdk.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// text is the result's single text content.
func text(t testing.TB, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// okJSON checks a successful object result — text and structuredContent
// holding the same JSON — and decodes it into out.
func okJSON(t testing.TB, res *sdk.CallToolResult, out any) {
	t.Helper()
	txt := text(t, res)
	if res.IsError {
		t.Fatalf("unexpected error result: %s", txt)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, []byte(txt), sc) {
		t.Fatalf("text %s and structuredContent %s differ", txt, sc)
	}
	if err := json.Unmarshal([]byte(txt), out); err != nil {
		t.Fatalf("decode %s: %v", txt, err)
	}
}

// errCode checks an error result — isError, the same {"error":{code,
// message}} as text and structuredContent — and returns code and message.
func errCode(t testing.TB, res *sdk.CallToolResult) (workspace.Code, string) {
	t.Helper()
	txt := text(t, res)
	if !res.IsError {
		t.Fatalf("want an error result, got %s", txt)
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, []byte(txt), sc) {
		t.Fatalf("text %s and structuredContent %s differ", txt, sc)
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(txt))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error result %s: %v", txt, err)
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("error result %s lacks code or message", txt)
	}
	return workspace.Code(body.Error.Code), body.Error.Message
}

func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, 15*time.Second, cond)
}

// rawRequest sends one HTTP request to the server with the given method,
// path, headers and body.
func (h *harness) rawRequest(method, path string, hdr http.Header, body io.Reader) *http.Response {
	h.t.Helper()
	u := strings.TrimSuffix(h.srv.URL(), Path) + path
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if host := hdr.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := (&http.Client{Transport: newTransport(h.t)}).Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// initializeBody is a valid first request of a session.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func mcpHeaders() http.Header {
	return http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json, text/event-stream"},
	}
}
