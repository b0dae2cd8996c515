package e2e

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"codehydra/internal/paths"
	"codehydra/mcp"
)

// otlpReceiver is an OTLP/HTTP collector of the test's own: it keeps every
// span and metric it is sent.
type otlpReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	posts   int
	headers []http.Header
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body []byte
		z, err := io.Reader(req.Body), error(nil)
		if req.Header.Get("Content-Encoding") == "gzip" {
			z, err = gzip.NewReader(req.Body)
		}
		if err == nil {
			body, err = io.ReadAll(z)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.posts++
		h := req.Header.Clone()
		h.Set("X-Test-Path", req.URL.Path) // which signal the post was
		r.headers = append(r.headers, h)
		var msg proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			m := &coltracepb.ExportTraceServiceRequest{}
			r.traces, msg = append(r.traces, m), m
		case "/v1/metrics":
			m := &colmetricpb.ExportMetricsServiceRequest{}
			r.metrics, msg = append(r.metrics, m), m
		default:
			http.NotFound(w, req)
			return
		}
		if err == nil {
			err = proto.Unmarshal(body, msg)
		}
		if err != nil {
			t.Errorf("OTLP %s: %v", req.URL.Path, err)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func attrsOf(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// span is the attributes of the first span named name, and its
// resource's.
func (r *otlpReceiver) span(name string) (attrs, resource map[string]string, ok bool) {
	s, rs := r.find(func(s *tracepb.Span) bool { return s.Name == name })
	if s == nil {
		return nil, nil, false
	}
	return attrsOf(s.Attributes), attrsOf(rs.Resource.GetAttributes()), true
}

// find is the first span received that match picks, and its resource's
// spans; nil when none.
func (r *otlpReceiver) find(match func(*tracepb.Span) bool) (*tracepb.Span, *tracepb.ResourceSpans) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if match(s) {
						return s, rs
					}
				}
			}
		}
	}
	return nil, nil
}

// metricNames is every metric name received.
func (r *otlpReceiver) metricNames() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	for _, req := range r.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.GetHistogram() != nil || m.GetSum() != nil || m.GetGauge() != nil {
						names[m.Name] = true
					}
				}
			}
		}
	}
	return names
}

// otelEnv is the environment without any OTEL_ variable, plus extra.
func otelEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func TestServeExportsSpansAndMetricsOfToolCallsOverOTLP(t *testing.T) {
	bin := builtApp(t)
	isolate(t)
	recv := newOTLPReceiver(t)
	// Metrics gzipped and traces not, both with a header: what the
	// exporters read from the environment reaches the collector.
	app := launch(t, bin, otelEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_METRIC_EXPORT_INTERVAL=300", "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_EXPORTER_OTLP_HEADERS=x-tenant=code%20hydra", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION=gzip"))
	if _, err := app.call(t, "", mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("project_list: %v", err)
	}

	var attrs, res map[string]string
	app.poll(t, "the span of the project_list call", func() bool {
		var ok bool
		attrs, res, ok = recv.span("tools/call " + mcp.ToolProjectList)
		return ok
	})
	want := map[string]string{"gen_ai.tool.name": mcp.ToolProjectList, "codehydra.caller": "user", "codehydra.outcome": "ok", "mcp.method.name": "tools/call"}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	if res["service.name"] != "codehydra" || res["service.version"] == "" {
		t.Errorf("resource %v, want service.name codehydra and a version", res)
	}
	app.poll(t, "the call's metrics and the gauges", func() bool {
		names := recv.metricNames()
		return names["codehydra.mcp.tool.duration"] && names["codehydra.mcp.tool.calls"] && names["codehydra.mcp.sessions"] && names["mcp.server.operation.duration"]
	})
	app.stop(t)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, h := range recv.headers {
		if h.Get("X-Tenant") != "code hydra" {
			t.Errorf("a post without the header from OTEL_EXPORTER_OTLP_HEADERS: %v", h)
		}
		if gzipped, metrics := h.Get("Content-Encoding") == "gzip", h.Get("X-Test-Path") == "/v1/metrics"; gzipped != metrics {
			t.Errorf("a post to %s gzipped %v: want the metrics' gzipped (OTEL_EXPORTER_OTLP_METRICS_COMPRESSION) and the traces' not", h.Get("X-Test-Path"), gzipped)
		}
	}
}

func TestServeRefusesAnUnusableTelemetryVariableAndSaysWhich(t *testing.T) {
	bin := builtApp(t)
	isolate(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = otelEnv("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS=authorization Bearer s3cret")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("serve ran with an unusable OTEL_EXPORTER_OTLP_HEADERS:\n%s", out)
	}
	if !strings.Contains(string(out), "OTEL_EXPORTER_OTLP_HEADERS: item 1 is not key=value") || strings.Contains(string(out), "s3cret") {
		t.Errorf("serve said:\n%s\nwant the variable named, and not its value", out)
	}
	if _, err := os.Stat(paths.InstanceFile()); err == nil {
		t.Error("serve left an instance file")
	}
}

func TestServeSendsNothingWhenTheSDKIsDisabled(t *testing.T) {
	bin := builtApp(t)
	isolate(t)
	recv := newOTLPReceiver(t)
	app := launch(t, bin, otelEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_SDK_DISABLED=true", "OTEL_METRIC_EXPORT_INTERVAL=100", "OTEL_BSP_SCHEDULE_DELAY=50"))
	if _, err := app.call(t, "", mcp.ToolProjectList, nil); err != nil {
		t.Fatalf("project_list: %v", err)
	}
	// Shutdown flushes whatever an enabled SDK holds, so nothing having
	// arrived by then shows that nothing was recorded; no wait is needed.
	app.stop(t)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.posts != 0 {
		t.Fatalf("the receiver got %d posts with OTEL_SDK_DISABLED=true", recv.posts)
	}
}
