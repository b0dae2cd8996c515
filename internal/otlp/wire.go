package otlp

import (
	"encoding/binary"
	"math"
)

// The protobuf wire format, written by hand for the few OTLP messages
// this package sends (https://protobuf.dev/programming-guides/encoding/).
// Scalars at their zero value are left out, as proto3 does; oneof members
// and `optional` fields are written whatever their value (the *Always
// methods), since there being written is what says they are set.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb is a protobuf message being written.
type pb []byte

func (b *pb) tag(field, wire int) { b.varint(uint64(field)<<3 | uint64(wire)) }

func (b *pb) varint(v uint64) { *b = binary.AppendUvarint(*b, v) }

// uint is a uint32, uint64, int64 (two's complement), bool or enum field.
func (b *pb) uint(field int, v uint64) {
	if v != 0 {
		b.tag(field, wireVarint)
		b.varint(v)
	}
}

func (b *pb) uintAlways(field int, v uint64) {
	b.tag(field, wireVarint)
	b.varint(v)
}

// sint32 is a zigzag-encoded sint32 field.
func (b *pb) sint32(field int, v int32) {
	b.uint(field, uint64(uint32(v<<1)^uint32(v>>31)))
}

func (b *pb) fixed64(field int, v uint64) {
	if v != 0 {
		b.fixed64Always(field, v)
	}
}

func (b *pb) fixed64Always(field int, v uint64) {
	b.tag(field, wireFixed64)
	*b = binary.LittleEndian.AppendUint64(*b, v)
}

func (b *pb) fixed32(field int, v uint32) {
	if v != 0 {
		b.tag(field, wireFixed32)
		*b = binary.LittleEndian.AppendUint32(*b, v)
	}
}

func (b *pb) double(field int, v float64) { b.fixed64(field, math.Float64bits(v)) }

func (b *pb) doubleAlways(field int, v float64) { b.fixed64Always(field, math.Float64bits(v)) }

func (b *pb) str(field int, s string) {
	if s != "" {
		b.strAlways(field, s)
	}
}

func (b *pb) strAlways(field int, s string) {
	b.tag(field, wireBytes)
	b.varint(uint64(len(s)))
	*b = append(*b, s...)
}

func (b *pb) bytes(field int, p []byte) {
	if len(p) != 0 {
		b.bytesAlways(field, p)
	}
}

func (b *pb) bytesAlways(field int, p []byte) {
	b.tag(field, wireBytes)
	b.varint(uint64(len(p)))
	*b = append(*b, p...)
}

// msg writes the message that fill writes as field. The message is
// written in place and its length put in front of it after, so nested
// messages need no buffer of their own.
func (b *pb) msg(field int, fill func(*pb)) {
	b.tag(field, wireBytes)
	start := len(*b)
	fill(b)
	n := len(*b) - start
	var size [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(size[:], uint64(n))
	*b = append(*b, size[:l]...)
	copy((*b)[start+l:], (*b)[start:start+n])
	copy((*b)[start:], size[:l])
}

// packedFixed64 is a packed repeated fixed64 (or double, as bits) field.
func packedFixed64[T uint64 | float64](b *pb, field int, vs []T) {
	if len(vs) == 0 {
		return
	}
	b.tag(field, wireBytes)
	b.varint(uint64(8 * len(vs)))
	for _, v := range vs {
		switch v := any(v).(type) {
		case uint64:
			*b = binary.LittleEndian.AppendUint64(*b, v)
		case float64:
			*b = binary.LittleEndian.AppendUint64(*b, math.Float64bits(v))
		}
	}
}

// packedVarint is a packed repeated uint64 field.
func (b *pb) packedVarint(field int, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	n := 0
	for _, v := range vs {
		n += varintLen(v)
	}
	b.tag(field, wireBytes)
	b.varint(uint64(n))
	for _, v := range vs {
		b.varint(v)
	}
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// field is one field read back by fields: its number, wire type, and its
// value (varint and fixed) or contents (bytes).
type field struct {
	num, wire int
	v         uint64
	bytes     []byte
}

// fields reads a message's fields, for the collector's few replies; ok is
// false when the bytes are not a well-formed message.
func fields(p []byte) (fs []field, ok bool) {
	for len(p) > 0 {
		key, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, false
		}
		p = p[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case wireVarint:
			f.v, n = binary.Uvarint(p)
			if n <= 0 {
				return nil, false
			}
			p = p[n:]
		case wireFixed64:
			if len(p) < 8 {
				return nil, false
			}
			f.v, p = binary.LittleEndian.Uint64(p), p[8:]
		case wireFixed32:
			if len(p) < 4 {
				return nil, false
			}
			f.v, p = uint64(binary.LittleEndian.Uint32(p)), p[4:]
		case wireBytes:
			l, n := binary.Uvarint(p)
			if n <= 0 || l > uint64(len(p)-n) {
				return nil, false
			}
			f.bytes, p = p[n:n+int(l)], p[n+int(l):]
		default:
			return nil, false
		}
		fs = append(fs, f)
	}
	return fs, true
}
