// Package tracectx carries W3C trace context (traceparent, tracestate)
// across MCP: in from what a client sends, in a request's _meta or its
// HTTP headers, and on to a server CodeHydra calls, in its request's
// _meta (the keys of OpenTelemetry's W3C propagator). So a client's trace
// goes on through CodeHydra's spans into the gateway's servers: one trace
// id from an agent to a server it reaches through CodeHydra.
//
// Only the two trace-context keys cross; baggage, which can carry any
// value a caller chose, does not.
package tracectx

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var w3c propagation.TraceContext

// Extract returns ctx with the remote span context that meta (a request's
// _meta) or, when meta has none, header carries. Without a valid one ctx
// is returned as it is.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if out := w3c.Extract(ctx, metaCarrier(meta)); trace.SpanContextFromContext(out).IsRemote() {
		return out
	}
	if header == nil {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(header))
}

// Inject returns meta with the span context of ctx set in it (a new map
// when meta is nil and there is one to set); without a valid span context
// meta is returned as it is. The caller's other keys are kept.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	w3c.Inject(ctx, metaCarrier(meta))
	return meta
}

// metaCarrier is a request's _meta as a propagation.TextMapCarrier: only
// string values are read.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
