package daemon

import (
	"context"
	"maps"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"codehydra/workspace"
)

func TestTelemetryIsWantedOnlyWithAnEndpoint(t *testing.T) {
	for _, c := range []struct {
		env             map[string]string
		traces, metrics bool
	}{
		{map[string]string{}, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}, false, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, true, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x"}, true, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://x"}, false, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, false, false},
	} {
		traces, metrics := otelWanted(func(k string) string { return c.env[k] })
		if traces != c.traces || metrics != c.metrics {
			t.Errorf("%v: traces %v metrics %v, want %v %v", c.env, traces, metrics, c.traces, c.metrics)
		}
	}
}

func TestUsageCountersReportWhatTheAgentsSpent(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	spent := workspace.AgentUsage{InputTokens: 1200, OutputTokens: 34, Cost: 0.56}
	if err := observeUsage(mp.Meter("codehydra"), func() workspace.AgentUsage { return spent }); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, p := range d.DataPoints {
					typ, _ := p.Attributes.Value("gen_ai.token.type")
					got[m.Name+"/"+typ.AsString()] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				if !d.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				for _, p := range d.DataPoints {
					got[m.Name] = p.Value
				}
			}
		}
	}
	want := map[string]float64{"codehydra.agent.tokens/input": 1200, "codehydra.agent.tokens/output": 34, "codehydra.agent.cost": 0.56}
	if !maps.Equal(got, want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
}
