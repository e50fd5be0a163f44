// Package msgp owns the msgpack reader every decoder of this module
// builds on: the wire's frames and envelopes and the Location Store's
// records. It checks every length prefix against the bytes that remain
// before it slices or allocates anything, and never panics on any input.
// It must not touch anything but bytes (no I/O, no allocation beyond what
// a caller asks to keep); of this module it imports only the error values.
package msgp

import (
	"encoding/binary"
	"strconv"

	"github.com/zlink-go/zlink/internal/zerr"
)

// msgpack type bytes.
const (
	Nil      = 0xc0
	False    = 0xc2
	True     = 0xc3
	Bin8     = 0xc4
	Bin16    = 0xc5
	Bin32    = 0xc6
	Ext8     = 0xc7
	Ext16    = 0xc8
	Ext32    = 0xc9
	Float32  = 0xca
	Float64  = 0xcb
	Uint8    = 0xcc
	Uint16   = 0xcd
	Uint32   = 0xce
	Uint64   = 0xcf
	Int8     = 0xd0
	Int16    = 0xd1
	Int32    = 0xd2
	Int64    = 0xd3
	FixExt1  = 0xd4
	FixExt16 = 0xd8
	Str8     = 0xd9
	Str16    = 0xda
	Str32    = 0xdb
	Array16  = 0xdc
	Array32  = 0xdd
	Map16    = 0xde
	Map32    = 0xdf
)

// Error says where and why a Reader (or a decoder built on it) gave up:
// the bytes do not follow the protocol. It matches zerr.ErrProtocol.
type Error struct {
	Offset int    // byte offset in the input where the problem was found (-1: not one place)
	Reason string // constant text
}

func (e *Error) Error() string {
	return "zlink: protocol error: " + e.Reason + " at offset " + strconv.Itoa(e.Offset)
}

// Is reports whether target is ErrProtocol.
func (e *Error) Is(target error) bool { return target == zerr.ErrProtocol }

// Reader decodes msgpack from b. The first problem is kept in err (a
// *DecodeError); after that every read returns a zero value and consumes
// nothing, so loops whose bounds were checked still terminate quickly.
type Reader struct {
	B   []byte
	Off int
	Err error // the first problem (an *Error), or nil
}

// Fail keeps reason as the reader's problem unless it has one already.
func (r *Reader) Fail(reason string) {
	if r.Err == nil {
		r.Err = &Error{Offset: r.Off, Reason: reason}
	}
}

func (r *Reader) Remaining() int { return len(r.B) - r.Off }

// Byte reads one byte.
func (r *Reader) Byte() (byte, bool) {
	if r.Err == nil && r.Off < len(r.B) {
		c := r.B[r.Off]
		r.Off++
		return c, true
	}
	r.Fail("unexpected end of input")
	return 0, false
}

// Take returns the next n bytes (aliasing the input) after checking that
// they exist.
func (r *Reader) Take(n uint64) ([]byte, bool) {
	if r.Err == nil && n <= uint64(len(r.B)-r.Off) {
		p := r.B[r.Off : r.Off+int(n) : r.Off+int(n)]
		r.Off += int(n)
		return p, true
	}
	r.Fail("length prefix exceeds input")
	return nil, false
}

func (r *Reader) BE(n int) uint64 {
	p, ok := r.Take(uint64(n))
	if !ok {
		return 0
	}
	switch n {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(p))
	case 4:
		return uint64(binary.BigEndian.Uint32(p))
	default:
		return binary.BigEndian.Uint64(p)
	}
}

// PeekNil consumes a msgpack nil if one is next.
func (r *Reader) PeekNil() bool {
	if r.Err == nil && r.Off < len(r.B) && r.B[r.Off] == Nil {
		r.Off++
		return true
	}
	return false
}

// Count checks that n items, each at least minSize bytes, fit in the input.
func (r *Reader) Count(n uint64, minSize int) int {
	if r.Err == nil && n <= uint64((len(r.B)-r.Off)/minSize) {
		return int(n)
	}
	r.Fail("element count exceeds input")
	return 0
}

// ArrayHeader reads an array header whose elements are each at least one byte.
func (r *Reader) ArrayHeader() int {
	return r.container(0x90, Array16, Array32, 1, "expected array")
}

// MapHeader reads a map header (each entry at least two bytes). A msgpack
// nil reports isNil.
func (r *Reader) MapHeader() (n int, isNil bool) {
	if r.PeekNil() {
		return 0, true
	}
	return r.container(0x80, Map16, Map32, 2, "expected map"), false
}

// container reads the header of an array or a map: fix is its fixed
// form's high nibble, c16 and c32 its 16- and 32-bit forms; each element
// takes at least minSize bytes of what remains.
func (r *Reader) container(fix, c16, c32 byte, minSize int, expected string) int {
	c, ok := r.Byte()
	if !ok {
		return 0
	}
	var n uint64
	switch {
	case c&0xf0 == fix:
		n = uint64(c & 0x0f)
	case c == c16:
		n = r.BE(2)
	case c == c32:
		n = r.BE(4)
	default:
		r.Off--
		r.Fail(expected)
		return 0
	}
	return r.Count(n, minSize)
}

// Uint reads a non-negative integer in any msgpack integer form and checks
// it against max.
func (r *Reader) Uint(max uint64) uint64 {
	c, ok := r.Byte()
	if !ok {
		return 0
	}
	var v uint64
	switch {
	case c < 0x80:
		v = uint64(c)
	case c == Uint8:
		v = r.BE(1)
	case c == Uint16:
		v = r.BE(2)
	case c == Uint32:
		v = r.BE(4)
	case c == Uint64:
		v = r.BE(8)
	case c >= Int8 && c <= Int64:
		size := 1 << (c - Int8)
		raw := r.BE(size)
		shift := 64 - 8*uint(size)
		if int64(raw<<shift)>>shift < 0 {
			r.Fail("negative integer")
			return 0
		}
		v = raw
	default:
		r.Off--
		r.Fail("expected unsigned integer")
		return 0
	}
	if r.Err == nil && v > max {
		r.Fail("integer out of range")
		return 0
	}
	return v
}

func (r *Reader) Bool() bool {
	c, ok := r.Byte()
	if !ok {
		return false
	}
	switch c {
	case False:
		return false
	case True:
		return true
	}
	r.Off--
	r.Fail("expected bool")
	return false
}

// StrBytes reads a msgpack str and returns its bytes, aliasing the input.
func (r *Reader) StrBytes() []byte {
	c, ok := r.Byte()
	if !ok {
		return nil
	}
	var n uint64
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == Str8:
		n = r.BE(1)
	case c == Str16:
		n = r.BE(2)
	case c == Str32:
		n = r.BE(4)
	default:
		r.Off--
		r.Fail("expected string")
		return nil
	}
	p, _ := r.Take(n)
	return p
}

// Str reads a msgpack str as a Go string (a copy).
func (r *Reader) Str() string { return string(r.StrBytes()) }

// BinBytes reads msgpack bin (str is accepted too) aliasing the input; a
// msgpack nil returns nil, an empty bin a non-nil empty slice.
func (r *Reader) BinBytes() []byte {
	if r.PeekNil() {
		return nil
	}
	c, ok := r.Byte()
	if !ok {
		return nil
	}
	var n uint64
	switch {
	case c == Bin8, c == Str8:
		n = r.BE(1)
	case c == Bin16, c == Str16:
		n = r.BE(2)
	case c == Bin32, c == Str32:
		n = r.BE(4)
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	default:
		r.Off--
		r.Fail("expected bin")
		return nil
	}
	p, _ := r.Take(n)
	return p
}

// FixedBin reads a bin of exactly len(dst) bytes into dst.
func (r *Reader) FixedBin(dst []byte) {
	p := r.BinBytes()
	if r.Err != nil {
		return
	}
	if len(p) != len(dst) {
		r.Fail("wrong fixed-size bin length")
		return
	}
	copy(dst, p)
}

// Skip skips one msgpack value of any type, at most depth levels deep. It
// allocates nothing.
func (r *Reader) Skip(depth int) {
	if depth <= 0 {
		r.Fail("nesting too deep")
		return
	}
	c, ok := r.Byte()
	if !ok {
		return
	}
	n, items, ok := r.extent(c)
	if !ok {
		r.Off--
		r.Fail("invalid msgpack type byte") // 0xc1 is never used
		return
	}
	if n > 0 {
		r.Take(n)
	}
	if items > 0 {
		k := r.Count(items, 1)
		for i := 0; i < k && r.Err == nil; i++ {
			r.Skip(depth - 1)
		}
	}
}

// extent says what follows type byte c: n bytes, or items nested values.
func (r *Reader) extent(c byte) (n, items uint64, ok bool) {
	switch {
	case c < 0x80 || c >= 0xe0, c == Nil, c == False, c == True: // fixint, nil, bool
		return 0, 0, true
	case c <= 0x8f: // fixmap
		return 0, 2 * uint64(c&0x0f), true
	case c <= 0x9f: // fixarray
		return 0, uint64(c & 0x0f), true
	case c <= 0xbf: // fixstr
		return uint64(c & 0x1f), 0, true
	case c == Float32:
		return 4, 0, true
	case c == Float64:
		return 8, 0, true
	case c >= Uint8 && c <= Uint64:
		return 1 << (c - Uint8), 0, true
	case c >= Int8 && c <= Int64:
		return 1 << (c - Int8), 0, true
	case c >= FixExt1 && c <= FixExt16:
		return 1 + 1<<(c-FixExt1), 0, true
	}
	return r.prefixed(c)
}

// prefixed reads the length prefix of the types that carry one.
func (r *Reader) prefixed(c byte) (n, items uint64, ok bool) {
	switch c {
	case Bin8, Str8:
		return r.BE(1), 0, true
	case Bin16, Str16:
		return r.BE(2), 0, true
	case Bin32, Str32:
		return r.BE(4), 0, true
	case Ext8:
		return r.BE(1) + 1, 0, true
	case Ext16:
		return r.BE(2) + 1, 0, true
	case Ext32:
		return r.BE(4) + 1, 0, true
	case Array16:
		return 0, r.BE(2), true
	case Array32:
		return 0, r.BE(4), true
	case Map16:
		return 0, 2 * r.BE(2), true
	case Map32:
		return 0, 2 * r.BE(4), true
	}
	return 0, 0, false
}

// ArrayHeaderOrNil reads an array header, or a msgpack nil (isNil).
func (r *Reader) ArrayHeaderOrNil() (n int, isNil bool) {
	if r.PeekNil() {
		return 0, true
	}
	return r.ArrayHeader(), false
}

// Text reads a str or a bin (not nil) of at most max bytes, aliasing the
// input.
func (r *Reader) Text(max int) []byte {
	if r.PeekNil() {
		r.Off--
		r.Fail("expected string")
		return nil
	}
	p := r.BinBytes()
	if r.Err == nil && len(p) > max {
		r.Off -= len(p)
		r.Fail("string longer than " + strconv.Itoa(max) + " bytes")
		return nil
	}
	return p
}
