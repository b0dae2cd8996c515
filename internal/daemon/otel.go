package daemon

// OpenTelemetry (README "Telemetry"): traces and metrics go out over
// OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* variables name an
// endpoint. The exporters (internal/otlp) read those variables (endpoint,
// headers, timeout, TLS) themselves; this file only decides whether to
// build them at all, so that without them no provider exists and the MCP
// server, handed none, makes no span and no measurement.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"codehydra/gateway"
	"codehydra/internal/otlp"
	"codehydra/workspace"
)

// telemetry is what setUpTelemetry set up: nil providers when nothing is
// exported.
type telemetry struct {
	tracer *sdktrace.TracerProvider
	meter  *sdkmetric.MeterProvider
}

// tracerProvider is the provider for mcp.Options and the supervisor; a
// nil interface (not a nil pointer in one) when traces are off.
func (t telemetry) tracerProvider() trace.TracerProvider {
	if t.tracer == nil {
		return nil
	}
	return t.tracer
}

// meterProvider is tracerProvider's counterpart for metrics.
func (t telemetry) meterProvider() metric.MeterProvider {
	if t.meter == nil {
		return nil
	}
	return t.meter
}

// otelWanted says which signals the environment asks to export: those
// with an endpoint of their own or the common one, unless the SDK is
// disabled.
func otelWanted(getenv func(string) string) (traces, metrics bool) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, false
	}
	common := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	return common || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "",
		common || getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != ""
}

// setUpTelemetry builds the exporting providers the environment asks
// for, and flushes and stops them at shutdown.
func (s *server) setUpTelemetry(ctx context.Context) error {
	traces, metrics := otelWanted(os.Getenv)
	if !traces && !metrics {
		return nil
	}
	// The environment's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
	// comes last, so that it wins.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "codehydra"), attribute.String("service.version", s.opts.Version)),
		resource.WithFromEnv())
	if err != nil {
		return fmt.Errorf("describe the service for telemetry: %w", err)
	}
	if traces {
		exp, err := otlp.NewTraceExporter(os.Getenv)
		if err != nil {
			return err
		}
		s.tel.tracer = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		s.onShutdown("flush traces", s.tel.tracer.Shutdown)
	}
	if metrics {
		exp, err := otlp.NewMetricExporter(os.Getenv)
		if err != nil {
			return err
		}
		s.tel.meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		s.onShutdown("flush metrics", s.tel.meter.Shutdown)
	}
	s.log.Info("exporting telemetry over OTLP", "traces", traces, "metrics", metrics)
	return nil
}

// observeGauges reports sessions, agents and gateway servers as gauges.
func (s *server) observeGauges(context.Context) error {
	if s.tel.meter == nil {
		return nil
	}
	m := s.tel.meter.Meter("codehydra")
	sessions, err1 := m.Int64ObservableGauge("codehydra.mcp.sessions", metric.WithDescription("open MCP sessions"), metric.WithUnit("{session}"))
	agents, err2 := m.Int64ObservableGauge("codehydra.agents", metric.WithDescription("OpenCode agents, by state"), metric.WithUnit("{agent}"))
	servers, err3 := m.Int64ObservableGauge("codehydra.gateway.servers", metric.WithDescription("the user's MCP servers, by state"), metric.WithUnit("{server}"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("make the gauges: %w", err)
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(sessions, int64(s.mcp.Sessions()))
		for state, n := range countBy(s.manager.AllWorkspaces(), func(ws workspace.Workspace) string { return string(s.sup.AgentStatus(ws.Path).State) }) {
			o.ObserveInt64(agents, n, metric.WithAttributes(attribute.String("codehydra.state", state)))
		}
		for state, n := range countBy(s.gateway.Statuses(), func(st gateway.ServerStatus) string { return string(st.State) }) {
			o.ObserveInt64(servers, n, metric.WithAttributes(attribute.String("codehydra.state", state)))
		}
		return nil
	}, sessions, agents, servers)
	if err != nil {
		return fmt.Errorf("observe the gauges: %w", err)
	}
	return observeUsage(m, s.sup.UsageSpent)
}

// observeUsage reports what the agents' model calls used while CodeHydra
// ran (spent) as counters: codehydra.agent.tokens by gen_ai.token.type
// (input or output, the OpenTelemetry GenAI convention's attribute) and
// codehydra.agent.cost in US dollars.
func observeUsage(m metric.Meter, spent func() workspace.AgentUsage) error {
	tokens, err1 := m.Int64ObservableCounter("codehydra.agent.tokens", metric.WithDescription("tokens the agents' model calls used, by direction"), metric.WithUnit("{token}"))
	cost, err2 := m.Float64ObservableCounter("codehydra.agent.cost", metric.WithDescription("what the agents' model calls cost, by their providers' prices"), metric.WithUnit("{USD}"))
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("make the usage counters: %w", err)
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		u := spent()
		o.ObserveInt64(tokens, u.InputTokens, metric.WithAttributes(attribute.String("gen_ai.token.type", "input")))
		o.ObserveInt64(tokens, u.OutputTokens, metric.WithAttributes(attribute.String("gen_ai.token.type", "output")))
		o.ObserveFloat64(cost, u.Cost)
		return nil
	}, tokens, cost)
	if err != nil {
		return fmt.Errorf("observe the usage counters: %w", err)
	}
	return nil
}

// countBy counts the items of each key.
func countBy[T any](items []T, key func(T) string) map[string]int64 {
	n := map[string]int64{}
	for _, it := range items {
		n[key(it)]++
	}
	return n
}
