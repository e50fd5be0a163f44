package wire

import (
	"encoding/binary"
	"math"

	"github.com/zlink-go/zlink/internal/msgp"
)

// This file and msgp_reader.go hold the reflection-free msgpack primitives
// Frame and Envelope are built from. The encoder always writes the smallest
// msgpack form; the reader accepts every msgpack form of a type (so other msgpack encoders can
// speak the protocol) but checks every length prefix against the bytes that
// remain before it allocates or slices anything.

// msgpack type bytes.
const (
	mpNil      = msgp.Nil
	mpFalse    = msgp.False
	mpTrue     = msgp.True
	mpBin8     = msgp.Bin8
	mpBin16    = msgp.Bin16
	mpBin32    = msgp.Bin32
	mpExt8     = msgp.Ext8
	mpExt16    = msgp.Ext16
	mpExt32    = msgp.Ext32
	mpFloat32  = msgp.Float32
	mpFloat64  = msgp.Float64
	mpUint8    = msgp.Uint8
	mpUint16   = msgp.Uint16
	mpUint32   = msgp.Uint32
	mpUint64   = msgp.Uint64
	mpInt8     = msgp.Int8
	mpInt16    = msgp.Int16
	mpInt32    = msgp.Int32
	mpInt64    = msgp.Int64
	mpFixExt1  = msgp.FixExt1
	mpFixExt16 = msgp.FixExt16
	mpStr8     = msgp.Str8
	mpStr16    = msgp.Str16
	mpStr32    = msgp.Str32
	mpArray16  = msgp.Array16
	mpArray32  = msgp.Array32
	mpMap16    = msgp.Map16
	mpMap32    = msgp.Map32
)

// encoder appends msgpack to b. The first length that cannot be represented
// (over 2^32-1) is kept in err; later writes still happen but the result is
// discarded by the caller.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) tooLarge(n int) {
	if e.err == nil {
		e.err = &TooLargeError{Size: uint64(n), Limit: math.MaxUint32}
	}
}

func (e *encoder) arrayHeader(n int) {
	switch {
	case n < 16:
		e.b = append(e.b, 0x90|byte(n))
	case n <= math.MaxUint16:
		e.b = append(e.b, mpArray16, byte(n>>8), byte(n))
	case uint64(n) <= math.MaxUint32:
		e.b = append(e.b, mpArray32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.tooLarge(n)
	}
}

func (e *encoder) mapHeader(n int) {
	switch {
	case n < 16:
		e.b = append(e.b, 0x80|byte(n))
	case n <= math.MaxUint16:
		e.b = append(e.b, mpMap16, byte(n>>8), byte(n))
	case uint64(n) <= math.MaxUint32:
		e.b = append(e.b, mpMap32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.tooLarge(n)
	}
}

func (e *encoder) uint(v uint64) {
	switch {
	case v < 128:
		e.b = append(e.b, byte(v))
	case v <= math.MaxUint8:
		e.b = append(e.b, mpUint8, byte(v))
	case v <= math.MaxUint16:
		e.b = append(e.b, mpUint16, byte(v>>8), byte(v))
	case v <= math.MaxUint32:
		e.b = append(e.b, mpUint32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(v))
	default:
		e.b = append(e.b, mpUint64)
		e.b = binary.BigEndian.AppendUint64(e.b, v)
	}
}

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, mpTrue)
	} else {
		e.b = append(e.b, mpFalse)
	}
}

func (e *encoder) string(s string) {
	n := len(s)
	switch {
	case n < 32:
		e.b = append(e.b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		e.b = append(e.b, mpStr8, byte(n))
	case n <= math.MaxUint16:
		e.b = append(e.b, mpStr16, byte(n>>8), byte(n))
	case uint64(n) <= math.MaxUint32:
		e.b = append(e.b, mpStr32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.tooLarge(n)
		return
	}
	e.b = append(e.b, s...)
}

// binString writes s as msgpack bin.
func (e *encoder) binString(s string) {
	if e.binHeader(len(s)) {
		e.b = append(e.b, s...)
	}
}

// binHeader writes the header of a msgpack bin of n bytes; false (and the
// encoder's error) when n is too large.
func (e *encoder) binHeader(n int) bool {
	switch {
	case n <= math.MaxUint8:
		e.b = append(e.b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		e.b = append(e.b, mpBin16, byte(n>>8), byte(n))
	case uint64(n) <= math.MaxUint32:
		e.b = append(e.b, mpBin32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	default:
		e.tooLarge(n)
		return false
	}
	return true
}

// bin writes p as msgpack bin; a nil p is written as msgpack nil so that
// "absent" and "empty" survive a round trip.
func (e *encoder) bin(p []byte) {
	if p == nil {
		e.b = append(e.b, mpNil)
		return
	}
	if e.binHeader(len(p)) {
		e.b = append(e.b, p...)
	}
}

func (e *encoder) nil() { e.b = append(e.b, mpNil) }
