package otlp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// MetricExporter sends metrics to the collector's /v1/metrics as an
// ExportMetricsServiceRequest, with the SDK's default temporality
// (cumulative) and aggregations.
type MetricExporter struct{ c *client }

var _ sdkmetric.Exporter = (*MetricExporter)(nil)

// NewMetricExporter is the metric exporter the environment describes
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
// and the rest of config).
func NewMetricExporter(getenv func(string) string) (*MetricExporter, error) {
	c, err := newClient(getenv, "METRICS", "v1/metrics")
	if err != nil {
		return nil, err
	}
	return &MetricExporter{c: c}, nil
}

// Temporality is the SDK's default: cumulative for every kind.
func (e *MetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation is the SDK's default for each kind.
func (e *MetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export sends rm in one request.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	// What can be sent is, even when a metric cannot be.
	body, err := encodeMetrics(rm)
	return errors.Join(err, e.c.send(ctx, body, "data points"))
}

// ForceFlush has nothing to do: Export sends before it returns.
func (e *MetricExporter) ForceFlush(context.Context) error { return nil }

// Shutdown stops the exporter: an export under way ends (without waiting
// to try again), and none is sent after.
func (e *MetricExporter) Shutdown(context.Context) error {
	e.c.stop()
	return nil
}

// encodeMetrics writes an ExportMetricsServiceRequest with rm's one
// ResourceMetrics.
func encodeMetrics(rm *metricdata.ResourceMetrics) ([]byte, error) {
	var b pb
	var err error
	b.msg(1, func(b *pb) {
		resourceMsg(b, 1, rm.Resource)
		for _, sm := range rm.ScopeMetrics {
			b.msg(2, func(b *pb) {
				scopeMsg(b, 1, sm.Scope)
				for _, m := range sm.Metrics {
					if e := metricMsg(b, m); e != nil && err == nil {
						err = e
					}
				}
				b.str(3, sm.Scope.SchemaURL)
			})
		}
		b.str(3, rm.Resource.SchemaURL())
	})
	return b, err
}

// metricMsg writes a Metric; one of an aggregation the protocol does not
// have is left out, with an error.
func metricMsg(b *pb, m metricdata.Metrics) error {
	data := func(b *pb) error {
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			b.msg(5, func(b *pb) { numberPoints(b, d.DataPoints) })
		case metricdata.Gauge[float64]:
			b.msg(5, func(b *pb) { numberPoints(b, d.DataPoints) })
		case metricdata.Sum[int64]:
			return sum(b, d)
		case metricdata.Sum[float64]:
			return sum(b, d)
		case metricdata.Histogram[int64]:
			return histogram(b, d)
		case metricdata.Histogram[float64]:
			return histogram(b, d)
		case metricdata.ExponentialHistogram[int64]:
			return expHistogram(b, d)
		case metricdata.ExponentialHistogram[float64]:
			return expHistogram(b, d)
		case metricdata.Summary:
			b.msg(11, func(b *pb) { summaryPoints(b, d.DataPoints) })
		default:
			return fmt.Errorf("metric %s: aggregation %T has no OTLP form", m.Name, d)
		}
		return nil
	}
	// A metric that cannot be sent is left out whole: what was written of
	// it is taken back.
	start := len(*b)
	var err error
	b.msg(2, func(b *pb) {
		b.str(1, m.Name)
		b.str(2, m.Description)
		b.str(3, m.Unit)
		err = data(b)
	})
	if err != nil {
		*b = (*b)[:start]
	}
	return err
}

// temporality is AggregationTemporality's number for t.
func temporality(t metricdata.Temporality) (uint64, error) {
	switch t {
	case metricdata.DeltaTemporality:
		return 1, nil
	case metricdata.CumulativeTemporality:
		return 2, nil
	default:
		return 0, fmt.Errorf("unknown temporality %s", t)
	}
}

func sum[N int64 | float64](b *pb, s metricdata.Sum[N]) error {
	t, err := temporality(s.Temporality)
	if err != nil {
		return err
	}
	b.msg(7, func(b *pb) {
		numberPoints(b, s.DataPoints)
		b.uint(2, t)
		b.uint(3, boolBit(s.IsMonotonic))
	})
	return nil
}

// numberPoints writes NumberDataPoints as field 1.
func numberPoints[N int64 | float64](b *pb, pts []metricdata.DataPoint[N]) {
	for _, p := range pts {
		b.msg(1, func(b *pb) {
			keyValueSet(b, 7, &p.Attributes)
			b.fixed64(2, unixNano(p.StartTime))
			b.fixed64(3, unixNano(p.Time))
			number(b, 4, 6, p.Value)
			exemplars(b, 5, p.Exemplars)
		})
	}
}

// number writes v as its oneof's as_double or as_int field.
func number[N int64 | float64](b *pb, asDouble, asInt int, v N) {
	switch v := any(v).(type) {
	case int64:
		b.fixed64Always(asInt, uint64(v))
	case float64:
		b.doubleAlways(asDouble, v)
	}
}

func exemplars[N int64 | float64](b *pb, field int, es []metricdata.Exemplar[N]) {
	for _, e := range es {
		b.msg(field, func(b *pb) {
			keyValues(b, 7, e.FilteredAttributes)
			b.fixed64(2, unixNano(e.Time))
			number(b, 3, 6, e.Value)
			b.bytes(4, e.SpanID)
			b.bytes(5, e.TraceID)
		})
	}
}

func histogram[N int64 | float64](b *pb, h metricdata.Histogram[N]) error {
	t, err := temporality(h.Temporality)
	if err != nil {
		return err
	}
	b.msg(9, func(b *pb) {
		for _, p := range h.DataPoints {
			b.msg(1, func(b *pb) {
				histogramHead(b, 9, &p.Attributes, p.StartTime, p.Time, p.Count, float64(p.Sum))
				packedFixed64(b, 6, p.BucketCounts)
				packedFixed64(b, 7, p.Bounds)
				exemplars(b, 8, p.Exemplars)
				extrema(b, 11, 12, p.Min, p.Max)
			})
		}
		b.uint(2, t)
	})
	return nil
}

func expHistogram[N int64 | float64](b *pb, h metricdata.ExponentialHistogram[N]) error {
	t, err := temporality(h.Temporality)
	if err != nil {
		return err
	}
	buckets := func(b *pb, field int, bk metricdata.ExponentialBucket) {
		b.msg(field, func(b *pb) {
			b.sint32(1, bk.Offset)
			b.packedVarint(2, bk.Counts)
		})
	}
	b.msg(10, func(b *pb) {
		for _, p := range h.DataPoints {
			b.msg(1, func(b *pb) {
				histogramHead(b, 1, &p.Attributes, p.StartTime, p.Time, p.Count, float64(p.Sum))
				b.sint32(6, p.Scale)
				b.fixed64(7, p.ZeroCount)
				buckets(b, 8, p.PositiveBucket)
				buckets(b, 9, p.NegativeBucket)
				exemplars(b, 11, p.Exemplars)
				extrema(b, 12, 13, p.Min, p.Max)
				b.double(14, p.ZeroThreshold)
			})
		}
		b.uint(2, t)
	})
	return nil
}

// histogramHead writes the fields both kinds of histogram data point
// have in the same places, and their attributes.
func histogramHead(b *pb, attrsField int, attrs *attribute.Set, start, end time.Time, count uint64, sum float64) {
	keyValueSet(b, attrsField, attrs)
	b.fixed64(2, unixNano(start))
	b.fixed64(3, unixNano(end))
	b.fixed64(4, count)
	b.doubleAlways(5, sum)
}

// extrema writes a data point's optional min and max, when known.
func extrema[N int64 | float64](b *pb, minField, maxField int, lo, hi metricdata.Extrema[N]) {
	if v, ok := lo.Value(); ok {
		b.doubleAlways(minField, float64(v))
	}
	if v, ok := hi.Value(); ok {
		b.doubleAlways(maxField, float64(v))
	}
}

func summaryPoints(b *pb, pts []metricdata.SummaryDataPoint) {
	for _, p := range pts {
		b.msg(1, func(b *pb) {
			keyValueSet(b, 7, &p.Attributes)
			b.fixed64(2, unixNano(p.StartTime))
			b.fixed64(3, unixNano(p.Time))
			b.fixed64(4, p.Count)
			b.double(5, p.Sum)
			for _, q := range p.QuantileValues {
				b.msg(6, func(b *pb) {
					b.double(1, q.Quantile)
					b.double(2, q.Value)
				})
			}
		})
	}
}
