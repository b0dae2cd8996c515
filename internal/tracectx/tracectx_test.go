package tracectx

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

const (
	fromMeta   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	fromHeader = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

func traceID(ctx context.Context) string { return trace.SpanContextFromContext(ctx).TraceID().String() }

func TestTheTraceContextComesFromMetaAndElseFromTheHeader(t *testing.T) {
	header := http.Header{"Traceparent": {fromHeader}}
	for _, c := range []struct {
		name   string
		meta   map[string]any
		header http.Header
		want   string
	}{
		{"meta", map[string]any{"traceparent": fromMeta, "tracestate": "k=v"}, nil, "0af7651916cd43dd8448eb211c80319c"},
		{"meta wins over header", map[string]any{"traceparent": fromMeta}, header, "0af7651916cd43dd8448eb211c80319c"},
		{"header", map[string]any{"progressToken": 1}, header, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"header, no meta", nil, header, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"a broken one in meta falls back to the header", map[string]any{"traceparent": "00-zz-yy-01"}, header, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"not a string", map[string]any{"traceparent": 42}, nil, "00000000000000000000000000000000"},
		{"none", nil, nil, "00000000000000000000000000000000"},
	} {
		ctx := Extract(context.Background(), c.meta, c.header)
		if got := traceID(ctx); got != c.want {
			t.Errorf("%s: trace id %s, want %s", c.name, got, c.want)
		}
	}
	ctx := Extract(context.Background(), map[string]any{"traceparent": fromMeta, "tracestate": "k=v"}, nil)
	if s := trace.SpanContextFromContext(ctx).TraceState().String(); s != "k=v" {
		t.Errorf("trace state %q, want k=v", s)
	}
}

func TestInjectSetsTheTraceContextAndKeepsTheOtherKeys(t *testing.T) {
	if m := Inject(context.Background(), nil); m != nil {
		t.Fatalf("without a span context Inject made %v", m)
	}
	ctx := Extract(context.Background(), map[string]any{"traceparent": fromMeta, "tracestate": "k=v"}, nil)
	m := Inject(ctx, map[string]any{"progressToken": "p"})
	if m["traceparent"] != fromMeta || m["tracestate"] != "k=v" || m["progressToken"] != "p" {
		t.Fatalf("Inject made %v", m)
	}
	if m := Inject(ctx, nil); m["traceparent"] != fromMeta {
		t.Fatalf("Inject into nil made %v", m)
	}
}
