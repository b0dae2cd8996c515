package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricapi "go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// These tests send the same spans and metrics through this package's
// exporters and through the OpenTelemetry SDK's own OTLP/HTTP exporters
// (a test-only dependency), decode what each sent with the protobuf
// runtime, and require the two to be the same message.

// collector is an OTLP/HTTP collector that keeps the bodies posted to
// each path.
type collector struct {
	srv *httptest.Server

	mu     sync.Mutex
	bodies map[string][][]byte
	reqs   []*http.Request
}

func newCollector(t *testing.T, reply http.HandlerFunc) *collector {
	t.Helper()
	c := &collector{bodies: map[string][][]byte{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read the request: %v", err)
		}
		c.mu.Lock()
		c.bodies[r.URL.Path] = append(c.bodies[r.URL.Path], body)
		c.reqs = append(c.reqs, r)
		c.mu.Unlock()
		if reply != nil {
			reply(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// take is the bodies posted to path since the last take.
func (c *collector) take(path string) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bodies[path]
	delete(c.bodies, path)
	return b
}

// one decodes the one body posted to path into m.
func (c *collector) one(t *testing.T, path string, m proto.Message) {
	t.Helper()
	bodies := c.take(path)
	if len(bodies) != 1 {
		t.Fatalf("%d requests to %s, want 1", len(bodies), path)
	}
	if err := proto.Unmarshal(bodies[0], m); err != nil {
		t.Fatalf("%s: not an OTLP message: %v", path, err)
	}
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func sameMessage(t *testing.T, ours, theirs proto.Message) {
	t.Helper()
	if !proto.Equal(ours, theirs) {
		o := prototext.MarshalOptions{Multiline: true}
		t.Errorf("this package sent\n%s\nthe SDK's exporter sent\n%s", o.Format(ours), o.Format(theirs))
	}
}

var (
	t0 = time.Date(2026, 11, 28, 1, 2, 3, 456789, time.UTC)

	// everyKind is one attribute of every kind of value.
	everyKind = []attribute.KeyValue{
		attribute.String("s", "text"),
		attribute.String("empty-string", ""),
		attribute.Bool("t", true),
		attribute.Bool("f", false),
		attribute.Int64("i", -42),
		attribute.Int64("zero", 0),
		attribute.Float64("d", 3.25),
		attribute.Float64("dzero", 0),
		attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -2, 0}),
		attribute.Float64Slice("ds", []float64{0.5, 0}),
		attribute.StringSlice("ss", []string{"a", ""}),
		attribute.StringSlice("no-strings", nil),
		attribute.ByteSlice("bytes", []byte{0, 1, 255}),
		attribute.Slice("mixed", attribute.StringValue("x"), attribute.IntValue(7), attribute.SliceValue(attribute.BoolValue(true))),
		attribute.Map("map", attribute.String("k", "v"), attribute.Map("inner", attribute.Int("n", 1))),
		{Key: "nothing"},
	}
)

func TestSpansAreSentAsTheSDKsExporterSendsThem(t *testing.T) {
	ctx := context.Background()
	col := newCollector(t, nil)
	ours, err := NewTraceExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(col.srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}

	ts, _ := trace.ParseTraceState("vendor=value,other=1")
	sc := func(tid, sid byte, remote bool, flags trace.TraceFlags) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{tid, 2, 3}, SpanID: trace.SpanID{sid, 9}, TraceFlags: flags, TraceState: ts, Remote: remote,
		})
	}
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", everyKind...)
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "codehydra/mcp", Version: "1.2", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.String("scope-attr", "x"))}
	stubs := tracetest.SpanStubs{
		{
			Name: "tools/call workspace_get_status", SpanContext: sc(1, 1, false, trace.FlagsSampled), Parent: sc(1, 7, true, trace.FlagsSampled),
			SpanKind: trace.SpanKindServer, StartTime: t0, EndTime: t0.Add(1500 * time.Microsecond),
			Attributes: everyKind,
			Events: []sdktrace.Event{
				{Name: "exception", Time: t0.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.String("exception.message", "boom")}, DroppedAttributeCount: 2},
				{Name: "bare"},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(4, 4, true, 0), Attributes: []attribute.KeyValue{attribute.Int("n", 3)}, DroppedAttributeCount: 1},
				{SpanContext: sc(5, 5, false, trace.FlagsSampled)},
			},
			Status:            sdktrace.Status{Code: codes.Error, Description: "tool failed"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Resource: res, InstrumentationScope: scope,
		},
		{
			Name: "child", SpanContext: sc(1, 2, false, trace.FlagsSampled), Parent: sc(1, 1, false, trace.FlagsSampled),
			SpanKind: trace.SpanKindClient, StartTime: t0, EndTime: t0.Add(time.Millisecond),
			Status: sdktrace.Status{Code: codes.Ok}, Resource: res, InstrumentationScope: scope,
		},
		{Name: "other scope", SpanContext: sc(2, 3, false, 0), SpanKind: trace.SpanKindInternal, StartTime: t0, EndTime: t0, Resource: res, InstrumentationScope: instrumentation.Scope{Name: "gateway"}},
		{Name: "no scope, no times", SpanContext: sc(2, 4, false, 0), Resource: other},
		{Name: "producer", SpanContext: sc(3, 5, false, 0), SpanKind: trace.SpanKindProducer, Resource: other, InstrumentationScope: scope},
		{Name: "consumer", SpanContext: sc(3, 6, false, 0), SpanKind: trace.SpanKindConsumer, Resource: other, InstrumentationScope: scope, StartTime: time.Unix(-5, 0)},
	}
	spans := stubs.Snapshots()

	if err := ours.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("ours: %v", err)
	}
	var got coltracepb.ExportTraceServiceRequest
	col.one(t, "/v1/traces", &got)
	if err := theirs.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("the SDK's: %v", err)
	}
	var want coltracepb.ExportTraceServiceRequest
	col.one(t, "/v1/traces", &want)

	// The SDK's exporter groups through a map: put both in one order.
	for _, req := range []*coltracepb.ExportTraceServiceRequest{&got, &want} {
		sort.Slice(req.ResourceSpans, func(i, j int) bool {
			return prototext.Format(req.ResourceSpans[i].Resource) < prototext.Format(req.ResourceSpans[j].Resource)
		})
		for _, rs := range req.ResourceSpans {
			sort.Slice(rs.ScopeSpans, func(i, j int) bool { return rs.ScopeSpans[i].Scope.GetName() < rs.ScopeSpans[j].Scope.GetName() })
		}
	}
	if len(got.ResourceSpans) != 2 {
		t.Errorf("%d resources, want 2", len(got.ResourceSpans))
	}
	sameMessage(t, &got, &want)

	if err := ours.ExportSpans(ctx, nil); err != nil {
		t.Errorf("no spans: %v", err)
	}
	if n := len(col.take("/v1/traces")); n != 0 {
		t.Errorf("no spans made %d requests", n)
	}
}

func TestMetricsAreSentAsTheSDKsExporterSendsThem(t *testing.T) {
	ctx := context.Background()
	col := newCollector(t, nil)
	ours, err := NewMetricExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": col.srv.URL + "/base/"}))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(col.srv.URL+"/base/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}

	// Real instruments of every kind, read by a manual reader; the
	// exponential histogram through a view.
	reader := sdkmetric.NewManualReader()
	expView := sdkmetric.NewView(sdkmetric.Instrument{Name: "exp"}, sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 20, MaxScale: 10}})
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(expView),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "codehydra"))))
	m := mp.Meter("codehydra/mcp", metricapi.WithInstrumentationVersion("1.0"))
	ic, _ := m.Int64Counter("calls", metricapi.WithUnit("{call}"), metricapi.WithDescription("calls"))
	fc, _ := m.Float64Counter("cost")
	ud, _ := m.Int64UpDownCounter("open")
	ih, _ := m.Int64Histogram("sizes")
	fh, _ := m.Float64Histogram("duration", metricapi.WithUnit("s"))
	eh, _ := m.Float64Histogram("exp")
	g, _ := m.Int64Gauge("gauge")
	fg, _ := m.Float64ObservableGauge("observed")
	if _, err := m.RegisterCallback(func(_ context.Context, o metricapi.Observer) error {
		o.ObserveFloat64(fg, 2.5, metricapi.WithAttributes(attribute.String("state", "ready")))
		return nil
	}, fg); err != nil {
		t.Fatal(err)
	}
	// A sampled span around the histograms' measurements gives them
	// exemplars.
	tp := sdktrace.NewTracerProvider()
	sctx, span := tp.Tracer("t").Start(ctx, "call")
	attrs := metricapi.WithAttributes(attribute.String("tool", "workspace_get_status"), attribute.Bool("ok", true))
	ic.Add(sctx, 3, attrs)
	ic.Add(sctx, 1)
	fc.Add(sctx, 0.125)
	ud.Add(sctx, -2, attrs)
	ih.Record(sctx, 7)
	ih.Record(sctx, 9)
	ih.Record(sctx, 700, attrs)
	fh.Record(sctx, 0.003, attrs)
	fh.Record(sctx, 12)
	fh.Record(sctx, 0.5)
	for _, v := range []float64{0.5, 1, 2, 4, -3, 0} {
		eh.Record(sctx, v)
	}
	g.Record(sctx, -9)
	span.End()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	// What the SDK's readers do not make: a summary and a delta sum.
	rm.ScopeMetrics = append(rm.ScopeMetrics, metricdata.ScopeMetrics{
		Scope: instrumentation.Scope{Name: "by hand"},
		Metrics: []metricdata.Metrics{
			{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
				Attributes: attribute.NewSet(attribute.String("a", "b")), StartTime: t0, Time: t0.Add(time.Second), Count: 3, Sum: 7.5,
				QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 0.5, Value: 2}, {Quantile: 1, Value: 4.5}},
			}}}},
			{Name: "delta", Data: metricdata.Sum[float64]{Temporality: metricdata.DeltaTemporality, DataPoints: []metricdata.DataPoint[float64]{{Time: t0, Value: 0}}}},
			{Name: "empty gauge", Data: metricdata.Gauge[int64]{}},
		},
	})

	if err := ours.Export(ctx, &rm); err != nil {
		t.Fatalf("ours: %v", err)
	}
	var got colmetricpb.ExportMetricsServiceRequest
	col.one(t, "/base/v1/metrics", &got)
	if err := theirs.Export(ctx, &rm); err != nil {
		t.Fatalf("the SDK's: %v", err)
	}
	var want colmetricpb.ExportMetricsServiceRequest
	col.one(t, "/base/v1/metrics", &want)

	exemplars, exp := 0, false
	for _, sm := range got.ResourceMetrics[0].ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, p := range m.GetHistogram().GetDataPoints() {
				exemplars += len(p.Exemplars)
			}
			exp = exp || len(m.GetExponentialHistogram().GetDataPoints()) > 0
		}
	}
	if exemplars == 0 || !exp {
		t.Errorf("the test's metrics lack what they are there to test: %d exemplars, exponential histogram %v", exemplars, exp)
	}
	sameMessage(t, &got, &want)
}

func TestAMetricWithoutAnOTLPFormIsLeftOutAndTheRestSent(t *testing.T) {
	col := newCollector(t, nil)
	ours, err := NewMetricExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": col.srv.URL + "/m"}))
	if err != nil {
		t.Fatal(err)
	}
	rm := metricdata.ResourceMetrics{Resource: resource.Empty(), ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "odd", Data: oddAggregation{}},
		{Name: "bad temporality", Data: metricdata.Sum[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: 1}}}},
		{Name: "fine", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Value: 1}}}},
	}}}}
	err = ours.Export(context.Background(), &rm)
	if err == nil {
		t.Fatal("no error for a metric that cannot be sent")
	}
	var got colmetricpb.ExportMetricsServiceRequest
	col.one(t, "/m", &got)
	ms := got.ResourceMetrics[0].ScopeMetrics[0].Metrics
	if len(ms) != 1 || ms[0].Name != "fine" || ms[0].GetGauge().GetDataPoints()[0].GetAsInt() != 1 {
		t.Errorf("sent %v, want only the gauge", ms)
	}
}

type oddAggregation struct{ metricdata.Aggregation }
