package otlp

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
)

// The messages of opentelemetry/proto/common/v1 and resource/v1 that
// traces and metrics share.

// keyValues writes attributes as repeated KeyValue field.
func keyValues(b *pb, field int, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		keyValue(b, field, kv)
	}
}

// keyValueSet is keyValues for a set's attributes, in the set's order.
func keyValueSet(b *pb, field int, set *attribute.Set) {
	for it := set.Iter(); it.Next(); {
		keyValue(b, field, it.Attribute())
	}
}

func keyValue(b *pb, field int, kv attribute.KeyValue) {
	b.msg(field, func(b *pb) {
		b.str(1, string(kv.Key))
		b.msg(2, func(b *pb) { anyValue(b, kv.Value) })
	})
}

// anyValue writes an AnyValue's one member; an empty attribute value
// writes none.
func anyValue(b *pb, v attribute.Value) {
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.BOOL:
		b.uintAlways(2, boolBit(v.AsBool()))
	case attribute.INT64:
		b.uintAlways(3, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b.doubleAlways(4, v.AsFloat64())
	case attribute.STRING:
		b.strAlways(1, v.AsString())
	case attribute.BYTESLICE:
		b.bytesAlways(7, v.AsByteSlice())
	case attribute.BOOLSLICE:
		array(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		array(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		array(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		array(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		array(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		b.msg(6, func(b *pb) { keyValues(b, 1, v.AsMap()) })
	default:
		// What the SDK's own exporter sends for a type it does not know.
		b.strAlways(1, "INVALID")
	}
}

// array writes an AnyValue's array_value of vs.
func array[T any](b *pb, vs []T, value func(T) attribute.Value) {
	b.msg(5, func(b *pb) {
		for _, v := range vs {
			b.msg(1, func(b *pb) { anyValue(b, value(v)) })
		}
	})
}

func boolBit(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// resourceMsg writes a Resource.
func resourceMsg(b *pb, field int, r *resource.Resource) {
	b.msg(field, func(b *pb) { keyValueSet(b, 1, r.Set()) })
}

// scopeMsg writes an InstrumentationScope.
func scopeMsg(b *pb, field int, s instrumentation.Scope) {
	b.msg(field, func(b *pb) {
		b.str(1, s.Name)
		b.str(2, s.Version)
		keyValueSet(b, 3, &s.Attributes)
	})
}

// unixNano is t for a fixed64 time field: 0 for times before 1970.
func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

// count is a dropped-items count for a uint32 field.
func count(n int) uint64 { return min(uint64(max(n, 0)), math.MaxUint32) }
