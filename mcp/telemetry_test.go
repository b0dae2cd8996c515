package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"codehydra/workspace"
)

// telemetryHarness is a harness whose server traces into spans and
// measures into reader.
func telemetryHarness(t testing.TB, opts ...harnessOption) (*harness, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	opts = append(opts, func(o *Options) { o.TracerProvider, o.MeterProvider = tp, mp })
	return newHarness(t, opts...), spans, reader
}

func spanAttrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func findSpan(spans tracetest.SpanStubs, name string) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func TestToolCallsMakeSpansWithToolCallerAndOutcome(t *testing.T) {
	h, spans, _ := telemetryHarness(t)
	ws := h.create("traced")
	call(t, h.sessionAs(h.tokenOf(ws.Path), ""), ToolGetStatus, map[string]any{})
	// The user's token names no workspace without the header: invalid input.
	call(t, h.session(""), ToolGetStatus, map[string]any{})

	var got []map[string]string
	for _, s := range spans.GetSpans() {
		if s.Name == "tools/call "+ToolGetStatus {
			got = append(got, spanAttrs(s))
		}
	}
	want := []map[string]string{
		{attrMethod: "tools/call", attrTool: ToolGetStatus, attrCaller: ws.Path, attrOutcome: "ok"},
		{attrMethod: "tools/call", attrTool: ToolGetStatus, attrCaller: userCaller, attrOutcome: string(workspace.CodeInvalidInput), attrError: string(workspace.CodeInvalidInput)},
	}
	if len(got) != len(want) {
		t.Fatalf("spans of %s: %v, want %d", ToolGetStatus, got, len(want))
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("span %d: %s = %q, want %q (all: %v)", i, k, got[i][k], v, got[i])
			}
		}
	}
	if _, ok := findSpan(spans.GetSpans(), "initialize"); !ok {
		t.Errorf("no span of the initialize request among %d spans", len(spans.GetSpans()))
	}
}

func TestToolCallsAreCountedAndTimedByOutcome(t *testing.T) {
	h, _, reader := telemetryHarness(t)
	ws := h.create("measured")
	cs := h.session(ws.Path)
	call(t, cs, ToolGetStatus, map[string]any{})
	call(t, cs, ToolGetStatus, map[string]any{})
	call(t, h.session(""), ToolGetStatus, map[string]any{})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	errs := map[string]int64{}
	var timed uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					tool, _ := dp.Attributes.Value(attrTool)
					if tool.AsString() != ToolGetStatus {
						continue
					}
					switch m.Name {
					case "codehydra.mcp.tool.calls":
						outcome, _ := dp.Attributes.Value(attrOutcome)
						calls[outcome.AsString()] += dp.Value
					case "codehydra.mcp.tool.errors":
						code, _ := dp.Attributes.Value(attrError)
						errs[code.AsString()] += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				if m.Name != "codehydra.mcp.tool.duration" {
					continue
				}
				for _, dp := range data.DataPoints {
					if v, _ := dp.Attributes.Value(attrTool); v.AsString() == ToolGetStatus {
						timed += dp.Count
					}
				}
			}
		}
	}
	if calls["ok"] != 2 || calls[string(workspace.CodeInvalidInput)] != 1 {
		t.Errorf("calls by outcome %v, want 2 ok and 1 invalid-input", calls)
	}
	if len(errs) != 1 || errs[string(workspace.CodeInvalidInput)] != 1 {
		t.Errorf("errors by code %v, want 1 invalid-input", errs)
	}
	if timed != 3 {
		t.Errorf("duration histogram counts %d calls, want 3", timed)
	}
}

func TestWorkspaceDeleteIsASpanUnderItsToolCall(t *testing.T) {
	h, spans, _ := telemetryHarness(t)
	ws := h.create("doomed")
	call(t, h.session(ws.Path), ToolDelete, map[string]any{})
	h.waitBackground()

	del, ok := findSpan(spans.GetSpans(), "workspace.delete")
	if !ok {
		t.Fatalf("no workspace.delete span among %v", spans.GetSpans())
	}
	parent, ok := findSpan(spans.GetSpans(), "tools/call "+ToolDelete)
	if !ok {
		t.Fatal("no span of the workspace_delete call")
	}
	if del.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("workspace.delete's parent is %s, want the call's span %s", del.Parent.SpanID(), parent.SpanContext.SpanID())
	}
	if got := spanAttrs(del)["codehydra.workspace"]; got != ws.Path {
		t.Errorf("workspace.delete names %q, want %q", got, ws.Path)
	}
}

func TestSpansHoldNoTokenAndNoArgumentValue(t *testing.T) {
	h, spans, _ := telemetryHarness(t)
	ws := h.create("secret")
	const value = "s3cret-argument-value"
	tokens := []string{h.token.Value(), h.tokenOf(ws.Path)}
	call(t, h.sessionAs(tokens[1], ""), ToolSetMetadata, map[string]any{"key": "note", "value": value})
	for _, s := range spans.GetSpans() {
		for _, kv := range s.Attributes {
			for _, secret := range append(tokens, value) {
				if strings.Contains(kv.Value.String(), secret) {
					t.Errorf("span %s: attribute %s holds a secret or an argument value: %q", s.Name, kv.Key, kv.Value.String())
				}
			}
		}
	}
	if len(spans.GetSpans()) == 0 {
		t.Fatal("no spans at all: the check above checked nothing")
	}
}

// BenchmarkToolCallTelemetry compares a tool call with telemetry off (no
// providers: no span, no measurement), with the no-op providers, and
// with the SDK's providers recording into memory.
func BenchmarkToolCallTelemetry(b *testing.B) {
	spans := tracetest.NewInMemoryExporter()
	cases := []struct {
		name string
		set  func(*Options)
	}{
		{"off", func(*Options) {}},
		{"noop", func(o *Options) {
			o.TracerProvider, o.MeterProvider = tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
		}},
		{"sdk", func(o *Options) {
			// Batched like the OTLP exporter is, so that the call does not
			// wait for the export.
			o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans))
			o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			h := newHarness(b, func(o *Options) { o.RateLimit, o.Burst = 1e9, 1e9 }, c.set)
			ws := h.create("bench")
			cs := h.session(ws.Path)
			params := &sdk.CallToolParams{Name: ToolGetStatus, Arguments: map[string]any{}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
			spans.Reset()
		})
	}
}
