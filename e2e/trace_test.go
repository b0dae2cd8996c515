package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// metaRecorder is a gateway server of the test's own (a go-sdk server on
// Streamable HTTP) whose one tool, echo, keeps the traceparent of each
// call's _meta.
type metaRecorder struct {
	url string

	mu   sync.Mutex
	seen []string
}

func newMetaRecorder(t *testing.T) *metaRecorder {
	r := &metaRecorder{}
	server := sdk.NewServer(&sdk.Implementation{Name: "recorder", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "echo", Description: "answers ok"}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		r.mu.Lock()
		r.seen = append(r.seen, tp)
		r.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// parentIn is the parent span id of the traceparent the server got in
// the trace traceID; "" when it got none.
func (r *metaRecorder) parentIn(traceID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tp := range r.seen {
		if parts := strings.Split(tp, "-"); len(parts) == 4 && parts[1] == traceID {
			return parts[2]
		}
	}
	return ""
}

// newTraceparent is a client's span: a traceparent of a new trace id and
// span id, sampled.
func newTraceparent() (traceparent, traceID, spanID string) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

// headers is a RoundTripper that sets its header on every request.
type headers http.Header

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// One trace from the client to a gateway server (issue 27, point 4): the
// trace context a client sends (in _meta over HTTP, in the HTTP header,
// or in _meta through mcp-stdio) is the parent of CodeHydra's span of the
// call, and that span is the parent the gateway server is given in its
// request's _meta.
func TestOneTraceRunsFromTheClientThroughCodeHydraToAGatewayServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	rec := newMetaRecorder(t)
	recv := newOTLPReceiver(t)
	bin, env, app, _, one := serveOneWorkspaceWith(t,
		map[string]any{"mcpServers": map[string]any{"rec": map[string]any{"url": rec.url, "startAtLaunch": true}}},
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100")
	const tool = "rec__echo"

	connectHTTP := func(h http.Header) *sdk.ClientSession {
		h = h.Clone()
		h.Set("Authorization", "Bearer "+app.info.Token)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-trace", Version: "1"}, nil).
			Connect(ctx, &sdk.StreamableClientTransport{Endpoint: app.info.MCPURL, HTTPClient: &http.Client{Transport: headers(h)}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	first := connectHTTP(http.Header{})
	app.poll(t, "the recorder's tool in the list", func() bool {
		res, err := first.ListTools(t.Context(), nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tl *sdk.Tool) bool { return tl.Name == tool })
	})

	check := func(how string, cs *sdk.ClientSession, meta sdk.Meta, traceID, spanID string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Meta: meta, Name: tool, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: call %s: %v %+v", how, tool, err, res)
		}
		parent := rec.parentIn(traceID)
		if parent == "" {
			t.Fatalf("%s: the gateway server got no traceparent of trace %s (got %q)", how, traceID, rec.seen)
		}
		if parent == spanID {
			t.Fatalf("%s: the gateway server's parent is the client's span, not CodeHydra's", how)
		}
		var span *tracepb.Span
		app.poll(t, how+": CodeHydra's span of the call", func() bool {
			span, _ = recv.find(func(s *tracepb.Span) bool { return hex.EncodeToString(s.SpanId) == parent })
			return span != nil
		})
		if span.Name != "tools/call "+tool || hex.EncodeToString(span.TraceId) != traceID || hex.EncodeToString(span.ParentSpanId) != spanID {
			t.Fatalf("%s: the span the server was given is %q in trace %x under %x, want tools/call %s in trace %s under the client's %s",
				how, span.Name, span.TraceId, span.ParentSpanId, tool, traceID, spanID)
		}
	}

	tp, traceID, spanID := newTraceparent()
	check("_meta over HTTP", first, sdk.Meta{"traceparent": tp}, traceID, spanID)

	tp, traceID, spanID = newTraceparent()
	check("the HTTP header", connectHTTP(http.Header{"Traceparent": {tp}}), nil, traceID, spanID)

	cs, stderr, err := stdioClient(t, bin, env, "--workspace", one)
	if err != nil {
		t.Fatalf("mcp-stdio: %v\n%s", err, stderr)
	}
	tp, traceID, spanID = newTraceparent()
	check("_meta through mcp-stdio", cs, sdk.Meta{"traceparent": tp}, traceID, spanID)
	app.stop(t)
}
