package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"codehydra/internal/testenv"
	"codehydra/mcp"
)

// bridgeServer is a real go-sdk MCP server over streamable HTTP on
// loopback, with tools that send progress, wait to be cancelled and
// change the tool list. Restart replaces it with a fresh server and a new
// token, as a restart of CodeHydra would: every session is forgotten.
type bridgeServer struct {
	http      *httptest.Server
	handler   atomic.Pointer[http.Handler]
	token     atomic.Value // string
	cancelled chan struct{}
	// httpOpts are the options of the SDK's HTTP handler (nil: sessions).
	httpOpts *sdk.StreamableHTTPOptions
	mu       sync.Mutex
	seen     []http.Header
}

func newBridgeServer(t *testing.T) *bridgeServer { return newBridgeServerWith(t, nil) }

// newBridgeServerWith is newBridgeServer with the SDK handler's options.
func newBridgeServerWith(t *testing.T, opts *sdk.StreamableHTTPOptions) *bridgeServer {
	t.Helper()
	s := &bridgeServer{cancelled: make(chan struct{}, 1), httpOpts: opts}
	s.restart("token-1")
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+s.token.Load().(string) {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(s.http.Close)
	return s
}

func (s *bridgeServer) restart(token string) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "bridge-test", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "halfway"})
		if err != nil {
			return nil, nil, err
		}
		<-ctx.Done()
		s.cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "grow"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(srv, &sdk.Tool{Name: "grown"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, s.httpOpts)
	s.token.Store(token)
	s.handler.Store(&h)
}

// progressAndCancel calls the tool slow as cs, checks that its progress
// reaches the client, cancels it and checks that the cancellation reaches
// the server's handler.
func (s *bridgeServer) progressAndCancel(t *testing.T, cs *sdk.ClientSession, progress <-chan string, stderr *testenv.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	params := &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	callErr := make(chan error, 1)
	go func() { _, err := cs.CallTool(ctx, params); callErr <- err }()
	select {
	case msg := <-progress:
		if msg != "halfway" {
			t.Fatalf("progress message %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no progress reached the client\nstderr: %s", stderr)
	}
	cancel()
	select {
	case <-s.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatalf("the cancellation did not reach the server\nstderr: %s", stderr)
	}
	<-callErr
}

func (s *bridgeServer) find(ws string) func() (Target, error) {
	return func() (Target, error) {
		return Target{URL: s.http.URL + mcp.Path, Token: s.token.Load().(string), Workspace: ws}, nil
	}
}

// connectBridge runs a bridge in process between the SDK's client (over
// pipes, as a client would talk to the command) and find's target.
func connectBridge(t *testing.T, find func() (Target, error), opts *sdk.ClientOptions) (*sdk.ClientSession, *testenv.SyncBuffer, chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &testenv.SyncBuffer{}
	exited := make(chan int, 1)
	go func() {
		code := Run(t.Context(), inR, outW, stderr, find)
		outW.Close()
		exited <- code
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect through the bridge: %v\nstderr: %s", err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop when the client closed its input")
		}
	})
	return cs, stderr, exited
}

func TestBridgePassesProgressCancellationAndListChanges(t *testing.T) {
	s := newBridgeServer(t)
	progress := make(chan string, 4)
	changed := make(chan struct{}, 4)
	cs, stderr, _ := connectBridge(t, s.find("/some/ws"), &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { progress <- r.Params.Message },
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})

	// Progress reaches the client; the client's cancellation reaches the
	// server's handler.
	s.progressAndCancel(t, cs, progress, stderr)

	// A change of the tool list, sent outside any request, reaches the
	// client on the stream the bridge keeps open.
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("tools/list_changed did not reach the client\nstderr: %s", stderr)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.seen {
		if h.Get(mcp.WorkspaceHeader) != "/some/ws" {
			t.Fatalf("a request went without X-Workspace-Path: %v", h)
		}
	}
}

func TestBridgeOpensANewSessionWhenTheServerRestarts(t *testing.T) {
	s := newBridgeServer(t)
	cs, stderr, _ := connectBridge(t, s.find(""), nil)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	// A restart forgets every session and brings a new token; the bridge
	// finds the new token and opens a new session on the next request.
	s.restart("token-2")
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "grow", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("a call after the restart: %v %v\nstderr: %s", res, err, stderr)
	}
	if !strings.Contains(stderr.String(), "opened a new session") {
		t.Fatalf("stderr does not say a new session was opened: %s", stderr)
	}
}

func TestBridgeAnswersTheFirstRequestWhenCodeHydraIsNotRunning(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr testenv.SyncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- Run(t.Context(), inR, outW, &stderr, func() (Target, error) { return Target{}, io.ErrUnexpectedEOF })
		outW.Close()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err == nil || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("connect without CodeHydra: %v, want the reason", err)
	}
	if code := <-exited; code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("stderr %q does not say why", stderr.String())
	}
}

// crServer is an MCP server over streamable HTTP that answers tool calls
// in event streams whose lines end with bare CRs, as the SSE format
// allows. Its tool "small" answers in one event; "big" answers in one
// event over maxEvent.
func crServer(t *testing.T) func() (Target, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": msg.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "cr", "version": "1"}}
		case "tools/call":
			text := msg.Params.Name
			if text == "big" {
				text = strings.Repeat("x", maxEvent)
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
		default:
			result = map[string]any{}
		}
		data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
		if err != nil {
			t.Error(err)
		}
		w.Header().Set(sessionHeader, "cr-session")
		if msg.Method != "tools/call" {
			// In JSON: the client's Connect waits without a deadline.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(data)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": hello\revent: message\rid: 1\rdata: %s\r\r", data)
	}))
	t.Cleanup(srv.Close)
	return func() (Target, error) { return Target{URL: srv.URL, Token: "t"}, nil }
}

func TestBridgeReadsBareCRStreamsAndRefusesAnEventOverItsLimit(t *testing.T) {
	cs, stderr, _ := connectBridge(t, crServer(t), nil)
	call := func(name string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			return "", err
		}
		if len(res.Content) != 1 {
			return "", fmt.Errorf("content %v", res.Content)
		}
		return res.Content[0].(*sdk.TextContent).Text, nil
	}
	if text, err := call("small"); err != nil || text != "small" {
		t.Fatalf("a call answered on a bare-CR stream: %q, %v\nstderr: %s", text, err, stderr)
	}
	if text, err := call("big"); err == nil || !strings.Contains(err.Error(), "refused an event") {
		t.Fatalf("a call answered with an event over %d bytes: %d bytes, %v; want it refused\nstderr: %s", maxEvent, len(text), err, stderr)
	}
	if text, err := call("small"); err != nil || text != "small" {
		t.Fatalf("a call after the refused one: %q, %v\nstderr: %s", text, err, stderr)
	}
}

// The bridge of a client of the stateless protocol (2026-07-28, the SDK
// client's default) with a server that speaks it: each request goes on
// its own with the protocol's headers and no session; progress comes
// back in the request's stream; a cancellation drops the request; after
// a restart (a new token) the next request finds the server again.
func TestBridgePassesTheStatelessProtocolRequestByRequest(t *testing.T) {
	s := newBridgeServerWith(t, &sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	progress := make(chan string, 4)
	cs, stderr, _ := connectBridge(t, s.find("/some/ws"), &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("protocol %q through the bridge, want 2026-07-28\nstderr: %s", got, stderr)
	}

	s.progressAndCancel(t, cs, progress, stderr)

	s.restart("token-2")
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "grow", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("a call after the restart: %v %v\nstderr: %s", res, err, stderr)
	}
	if !strings.Contains(stderr.String(), "found CodeHydra again") {
		t.Fatalf("stderr does not say the server was found again: %s", stderr)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.seen {
		if h.Get(mcp.WorkspaceHeader) != "/some/ws" || h.Get("Mcp-Session-Id") != "" || h.Get("Mcp-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") == "" {
			t.Fatalf("a stateless request went with the headers %v", h)
		}
	}
}

// A server that keeps sessions (a CodeHydra from before 2026-07-28)
// answers the stateless client's server/discover with its own versions,
// through the bridge: the client opens a session instead.
func TestBridgeLetsTheNewestClientFallBackToASession(t *testing.T) {
	s := newBridgeServer(t)
	cs, stderr, _ := connectBridge(t, s.find(""), nil)
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("protocol %q, want 2025-11-25 from a server with sessions\nstderr: %s", got, stderr)
	}
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("a call in the session: %v\nstderr: %s", err, stderr)
	}
}

// A server's JSON-RPC error answered with a 4xx status reaches the
// client as the server wrote it, under the request's id: here a server
// with sessions only refuses a stateless tools/call, naming the versions
// it takes.
func TestBridgePassesTheServersRefusalOnAsItIs(t *testing.T) {
	s := newBridgeServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr testenv.SyncBuffer
	go func() {
		Run(t.Context(), inR, outW, &stderr, s.find(""))
		outW.Close()
	}()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"grow","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`+"\n")
	}()
	var answer struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.NewDecoder(outR).Decode(&answer); err != nil {
		t.Fatalf("read the answer: %v\nstderr: %s", err, &stderr)
	}
	inW.Close()
	if string(answer.ID) != "7" || answer.Error.Code != sdk.CodeUnsupportedProtocolVersion || !slices.Contains(answer.Error.Data.Supported, "2025-11-25") {
		t.Fatalf("answer %+v, want the server's unsupported-version error for id 7, naming 2025-11-25", answer)
	}
}

// Stateless requests read together with their cancellations: each
// cancellation finds its request (registered before the request's
// goroutine starts), and a second request under way with the same id is
// refused rather than taking the first one's place.
func TestBridgeCancelsAStatelessRequestReadWithItsCancellationAndRefusesADuplicateID(t *testing.T) {
	s := newBridgeServerWith(t, &sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr testenv.SyncBuffer
	b := newBridge(outW, &stderr, s.find(""))
	go func() {
		b.run(t.Context(), inR)
		outW.Close()
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}`
	wait := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait","arguments":{},%s}}`+"\n", id, meta)
	}
	cancel := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,%s}}`+"\n", id, meta)
	}
	// One write: the bridge reads the lines one right after the other.
	// Twenty pairs, as a lost cancellation depends on which goroutine
	// runs first.
	var lines strings.Builder
	for id := 1; id <= 20; id++ {
		lines.WriteString(wait(id) + cancel(id))
	}
	lines.WriteString(wait(99) + wait(99) + cancel(99))
	go func() { _, _ = io.WriteString(inW, lines.String()) }()
	defer inW.Close()

	answers := make(chan json.RawMessage, 4)
	go func() {
		dec := json.NewDecoder(outR)
		for {
			var m json.RawMessage
			if dec.Decode(&m) != nil {
				return
			}
			answers <- m
		}
	}()
	select {
	case m := <-answers:
		var answer struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m, &answer); err != nil || string(answer.ID) != "99" || answer.Error.Code != invalidRequestCode {
			t.Fatalf("answer %s, want the refusal of the second request 99 (%d)", m, invalidRequestCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the second request with id 99 was not refused\nstderr: %s", &stderr)
	}
	// Both cancellations dropped their requests: none is under way (the
	// tool "wait" waits for ever otherwise).
	testenv.WaitFor(t, "the cancelled requests to end", 10*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.calls) == 0
	})
	select {
	case m := <-answers:
		t.Fatalf("a cancelled request was answered: %s", m)
	default:
	}
}
