package mcp

// Traces and metrics of the call pipeline (OpenTelemetry): a span per
// request and per tool call, a duration histogram and counters of calls
// and errors. They go to Options.TracerProvider and MeterProvider; with
// neither set the pipeline makes no span, no attribute and no
// measurement, so that telemetry off costs nothing per call (see
// BenchmarkToolCallTelemetry). Attributes name the tool, the caller and
// the outcome, never a token, an argument's value or an env value.

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"codehydra/workspace"
)

// instrumentation is the name CodeHydra's tracers and meters carry.
const instrumentation = "codehydra"

// The attribute names of spans and metrics (README "Telemetry"); those of
// OpenTelemetry's semantic conventions for MCP where one fits.
const (
	attrMethod  = "mcp.method.name"
	attrTool    = "gen_ai.tool.name"
	attrCaller  = "codehydra.caller"      // "user", or the workspace path of a workspace's token
	attrKind    = "codehydra.caller.kind" // "user" or "workspace": the metrics' low-cardinality caller
	attrOutcome = "codehydra.outcome"     // "ok", an error code, or "tool-error"
	attrServer  = "codehydra.gateway.server"
	attrError   = "error.type"
)

// telemetry holds the instruments of the pipeline. A nil *telemetry is
// telemetry off: every method returns at once.
type telemetry struct {
	tracer      trace.Tracer
	calls       metric.Int64Counter
	errors      metric.Int64Counter
	duration    metric.Float64Histogram
	requests    metric.Int64Counter
	reqDuration metric.Float64Histogram
}

// newTelemetry makes the instruments, or nil when neither provider is set.
// A provider left nil makes no spans (or no metrics) while the other works.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &telemetry{tracer: tp.Tracer(instrumentation)}
	m := mp.Meter(instrumentation)
	var errs [5]error
	t.calls, errs[0] = m.Int64Counter("codehydra.mcp.tool.calls", metric.WithDescription("MCP tool calls, by tool, caller kind and outcome"), metric.WithUnit("{call}"))
	t.errors, errs[1] = m.Int64Counter("codehydra.mcp.tool.errors", metric.WithDescription("failed MCP tool calls, by tool and error code"), metric.WithUnit("{call}"))
	t.duration, errs[2] = m.Float64Histogram("codehydra.mcp.tool.duration", metric.WithDescription("duration of MCP tool calls"), metric.WithUnit("s"))
	t.requests, errs[3] = m.Int64Counter("codehydra.mcp.requests", metric.WithDescription("MCP requests, by method"), metric.WithUnit("{request}"))
	t.reqDuration, errs[4] = m.Float64Histogram("mcp.server.operation.duration", metric.WithDescription("duration of MCP requests, by method"), metric.WithUnit("s"))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// startRequest opens the span of a request other than tools/call (whose
// span callTool opens) and returns what ends it, with the request's
// measurements.
func (t *telemetry) startRequest(ctx context.Context, method string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	start := time.Now()
	var span trace.Span
	if method != "tools/call" {
		ctx, span = t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String(attrMethod, method)))
	}
	return ctx, func(err error) {
		attrs := []attribute.KeyValue{attribute.String(attrMethod, method)}
		if err != nil {
			attrs = append(attrs, attribute.String(attrError, "jsonrpc"))
		}
		set := metric.WithAttributes(attrs...)
		t.requests.Add(ctx, 1, set)
		t.reqDuration.Record(ctx, time.Since(start).Seconds(), set)
		if span != nil {
			if err != nil {
				// Not err's text: a JSON-RPC error may quote what the
				// caller sent (see endCall: only the code).
				span.SetStatus(codes.Error, "jsonrpc error")
			}
			span.End()
		}
	}
}

// startCall opens the span of a tool call.
func (t *telemetry) startCall(ctx context.Context, tool string) context.Context {
	if t == nil {
		return ctx
	}
	ctx, _ = t.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(attrMethod, "tools/call"), attribute.String(attrTool, tool)))
	return ctx
}

// endCall ends the span of a finished call and records it: its caller and
// outcome on the span, its duration and count, and its error code.
func (t *telemetry) endCall(ctx context.Context, rec *auditEntry, who caller, d time.Duration) {
	if t == nil {
		return
	}
	kind := "workspace"
	if who.isUser() {
		kind = userCaller
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String(attrCaller, rec.Caller), attribute.String(attrOutcome, rec.Outcome))
	if rec.Server != "" {
		span.SetAttributes(attribute.String(attrServer, rec.Server))
	}
	attrs := []attribute.KeyValue{attribute.String(attrTool, rec.Tool), attribute.String(attrKind, kind), attribute.String(attrOutcome, rec.Outcome)}
	if rec.Outcome != "ok" {
		// Only the code: the message may quote what the caller sent.
		span.SetAttributes(attribute.String(attrError, rec.Outcome))
		span.SetStatus(codes.Error, rec.Outcome)
		t.errors.Add(ctx, 1, metric.WithAttributes(attribute.String(attrTool, rec.Tool), attribute.String(attrError, rec.Outcome)))
	}
	set := metric.WithAttributes(attrs...)
	t.calls.Add(ctx, 1, set)
	t.duration.Record(ctx, d.Seconds(), set)
	span.End()
}

// tracedWorkspaces gives the creates and deletes of workspaces that MCP
// calls ask for spans of their own, children of the call's span.
type tracedWorkspaces struct {
	wrapped
	tracer trace.Tracer
}

// traceWorkspaces wraps ws unless telemetry is off.
func (t *telemetry) traceWorkspaces(ws Workspaces) Workspaces {
	if t == nil || ws == nil {
		return ws
	}
	return &tracedWorkspaces{wrapped: ws, tracer: t.tracer}
}

// Create creates the workspace under a "workspace.create" span.
func (w *tracedWorkspaces) Create(ctx context.Context, o workspace.CreateOptions) (workspace.Workspace, error) {
	ctx, span := w.tracer.Start(ctx, "workspace.create", trace.WithAttributes(attribute.String("codehydra.project", o.ProjectPath)))
	ws, err := w.wrapped.Create(ctx, o)
	endSpan(span, err)
	return ws, err
}

// StartDelete reserves the delete and returns its work under a
// "workspace.delete" span, which lasts as long as the work does.
func (w *tracedWorkspaces) StartDelete(ctx context.Context, wsPath string, o workspace.DeleteOptions) (func(context.Context) error, error) {
	ctx, span := w.tracer.Start(ctx, "workspace.delete", trace.WithAttributes(attribute.String("codehydra.workspace", wsPath)))
	run, err := w.wrapped.StartDelete(ctx, wsPath, o)
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	return func(ctx context.Context) error {
		err := run(trace.ContextWithSpan(ctx, span))
		endSpan(span, err)
		return err
	}, nil
}

// endSpan ends span, marked failed with err's code when there is one.
func endSpan(span trace.Span, err error) {
	if err != nil {
		code := string(workspace.CodeOf(err))
		span.SetAttributes(attribute.String(attrError, code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}
