package otlp

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TraceExporter sends spans to the collector's /v1/traces as an
// ExportTraceServiceRequest.
type TraceExporter struct{ c *client }

var _ sdktrace.SpanExporter = (*TraceExporter)(nil)

// NewTraceExporter is the span exporter the environment describes
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and
// the rest of config).
func NewTraceExporter(getenv func(string) string) (*TraceExporter, error) {
	c, err := newClient(getenv, "TRACES", "v1/traces")
	if err != nil {
		return nil, err
	}
	return &TraceExporter{c: c}, nil
}

// ExportSpans sends spans in one request.
func (e *TraceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	return e.c.send(ctx, encodeSpans(spans), "spans")
}

// Shutdown stops the exporter: an export under way ends (without waiting
// to try again), and none is sent after.
func (e *TraceExporter) Shutdown(context.Context) error {
	e.c.stop()
	return nil
}

// encodeSpans writes an ExportTraceServiceRequest: a ResourceSpans per
// resource, in it a ScopeSpans per instrumentation scope, in the order
// they first come in spans.
func encodeSpans(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  map[instrumentation.Scope][]sdktrace.ReadOnlySpan
	}
	var order []attribute.Distinct
	groups := map[attribute.Distinct]*group{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res, scope := s.Resource().Equivalent(), s.InstrumentationScope()
		g := groups[res]
		if g == nil {
			g = &group{res: s.Resource(), spans: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			groups[res] = g
			order = append(order, res)
		}
		if _, seen := g.spans[scope]; !seen {
			g.scopes = append(g.scopes, scope)
		}
		g.spans[scope] = append(g.spans[scope], s)
	}

	var b pb
	for _, r := range order {
		g := groups[r]
		b.msg(1, func(b *pb) {
			if g.res != nil {
				resourceMsg(b, 1, g.res)
			}
			for _, scope := range g.scopes {
				b.msg(2, func(b *pb) {
					if scope != (instrumentation.Scope{}) {
						scopeMsg(b, 1, scope)
					}
					for _, s := range g.spans[scope] {
						b.msg(2, func(b *pb) { span(b, s) })
					}
					b.str(3, scope.SchemaURL)
				})
			}
			b.str(3, g.res.SchemaURL())
		})
	}
	return b
}

// span writes a Span.
func span(b *pb, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b.bytes(1, tid[:])
	b.bytes(2, sid[:])
	b.str(3, sc.TraceState().String())
	if p := s.Parent().SpanID(); p.IsValid() {
		b.bytes(4, p[:])
	}
	b.str(5, s.Name())
	b.uint(6, spanKind(s.SpanKind()))
	b.fixed64(7, unixNano(s.StartTime()))
	b.fixed64(8, unixNano(s.EndTime()))
	keyValues(b, 9, s.Attributes())
	b.uint(10, count(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b.msg(11, func(b *pb) {
			b.fixed64(1, unixNano(ev.Time))
			b.str(2, ev.Name)
			keyValues(b, 3, ev.Attributes)
			b.uint(4, count(ev.DroppedAttributeCount))
		})
	}
	b.uint(12, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		b.msg(13, func(b *pb) {
			tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b.bytes(1, tid[:])
			b.bytes(2, sid[:])
			keyValues(b, 4, l.Attributes)
			b.uint(5, count(l.DroppedAttributeCount))
			b.fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b.uint(14, count(s.DroppedLinks()))
	b.msg(15, func(b *pb) {
		st := s.Status()
		b.str(2, st.Description)
		b.uint(3, statusCode(st.Code))
	})
	b.fixed32(16, spanFlags(sc.TraceFlags(), s.Parent()))
}

// spanFlags is a Span's or Link's flags: the W3C trace flags, and
// whether the parent is remote (and that this is known).
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	const hasIsRemote, isRemote = 0x100, 0x200
	flags := uint32(tf) | hasIsRemote
	if parent.IsRemote() {
		flags |= isRemote
	}
	return flags
}

// spanKind is Span.SpanKind's number for k.
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return uint64(k) // the SDK's numbers are the protocol's
	default:
		return 0
	}
}

// statusCode is Status.StatusCode's number for c.
func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	default:
		return 0
	}
}
