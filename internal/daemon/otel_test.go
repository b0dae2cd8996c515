package daemon

import "testing"

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
