package wire

import (
	"encoding/binary"
)

// The decoding half of the msgpack primitives (msgp.go has the encoder).

// reader decodes msgpack from b. The first problem is kept in err (a
// *DecodeError); after that every read returns a zero value and consumes
// nothing, so loops whose bounds were checked still terminate quickly.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(reason string) {
	if r.err == nil {
		r.err = &DecodeError{Offset: r.off, Reason: reason}
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) byte() (byte, bool) {
	if r.err != nil {
		return 0, false
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end of input")
		return 0, false
	}
	c := r.b[r.off]
	r.off++
	return c, true
}

// take returns the next n bytes (aliasing the input) after checking that
// they exist.
func (r *reader) take(n uint64) ([]byte, bool) {
	if r.err != nil {
		return nil, false
	}
	if n > uint64(r.remaining()) {
		r.fail("length prefix exceeds input")
		return nil, false
	}
	p := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return p, true
}

func (r *reader) be(n int) uint64 {
	p, ok := r.take(uint64(n))
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

// peekNil consumes a msgpack nil if one is next.
func (r *reader) peekNil() bool {
	if r.err == nil && r.off < len(r.b) && r.b[r.off] == mpNil {
		r.off++
		return true
	}
	return false
}

// count checks that n items, each at least minSize bytes, fit in the input.
func (r *reader) count(n uint64, minSize int) int {
	if r.err != nil {
		return 0
	}
	if n > uint64(r.remaining()/minSize) {
		r.fail("element count exceeds input")
		return 0
	}
	return int(n)
}

// arrayHeader reads an array header whose elements are each at least one byte.
func (r *reader) arrayHeader() int {
	c, ok := r.byte()
	if !ok {
		return 0
	}
	var n uint64
	switch {
	case c&0xf0 == 0x90:
		n = uint64(c & 0x0f)
	case c == mpArray16:
		n = r.be(2)
	case c == mpArray32:
		n = r.be(4)
	default:
		r.off--
		r.fail("expected array")
		return 0
	}
	return r.count(n, 1)
}

// mapHeader reads a map header (each entry at least two bytes). A msgpack
// nil reports isNil.
func (r *reader) mapHeader() (n int, isNil bool) {
	if r.peekNil() {
		return 0, true
	}
	c, ok := r.byte()
	if !ok {
		return 0, false
	}
	var m uint64
	switch {
	case c&0xf0 == 0x80:
		m = uint64(c & 0x0f)
	case c == mpMap16:
		m = r.be(2)
	case c == mpMap32:
		m = r.be(4)
	default:
		r.off--
		r.fail("expected map")
		return 0, false
	}
	return r.count(m, 2), false
}

// uint reads a non-negative integer in any msgpack integer form and checks
// it against max.
func (r *reader) uint(max uint64) uint64 {
	c, ok := r.byte()
	if !ok {
		return 0
	}
	var v uint64
	switch {
	case c < 0x80:
		v = uint64(c)
	case c == mpUint8:
		v = r.be(1)
	case c == mpUint16:
		v = r.be(2)
	case c == mpUint32:
		v = r.be(4)
	case c == mpUint64:
		v = r.be(8)
	case c >= mpInt8 && c <= mpInt64:
		size := 1 << (c - mpInt8)
		raw := r.be(size)
		shift := 64 - 8*uint(size)
		if int64(raw<<shift)>>shift < 0 {
			r.fail("negative integer")
			return 0
		}
		v = raw
	default:
		r.off--
		r.fail("expected unsigned integer")
		return 0
	}
	if r.err == nil && v > max {
		r.fail("integer out of range")
		return 0
	}
	return v
}

func (r *reader) bool() bool {
	c, ok := r.byte()
	if !ok {
		return false
	}
	switch c {
	case mpFalse:
		return false
	case mpTrue:
		return true
	}
	r.off--
	r.fail("expected bool")
	return false
}

// strBytes reads a msgpack str and returns its bytes, aliasing the input.
func (r *reader) strBytes() []byte {
	c, ok := r.byte()
	if !ok {
		return nil
	}
	var n uint64
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == mpStr8:
		n = r.be(1)
	case c == mpStr16:
		n = r.be(2)
	case c == mpStr32:
		n = r.be(4)
	default:
		r.off--
		r.fail("expected string")
		return nil
	}
	p, _ := r.take(n)
	return p
}

func (r *reader) string() string { return string(r.strBytes()) }

// binBytes reads msgpack bin (str is accepted too) aliasing the input; a
// msgpack nil returns nil, an empty bin a non-nil empty slice.
func (r *reader) binBytes() []byte {
	if r.peekNil() {
		return nil
	}
	c, ok := r.byte()
	if !ok {
		return nil
	}
	var n uint64
	switch {
	case c == mpBin8, c == mpStr8:
		n = r.be(1)
	case c == mpBin16, c == mpStr16:
		n = r.be(2)
	case c == mpBin32, c == mpStr32:
		n = r.be(4)
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	default:
		r.off--
		r.fail("expected bin")
		return nil
	}
	p, _ := r.take(n)
	return p
}

// fixedBin reads a bin of exactly len(dst) bytes into dst.
func (r *reader) fixedBin(dst []byte) {
	p := r.binBytes()
	if r.err != nil {
		return
	}
	if len(p) != len(dst) {
		r.fail("wrong fixed-size bin length")
		return
	}
	copy(dst, p)
}

// skip skips one msgpack value of any type, at most depth levels deep. It
// allocates nothing.
func (r *reader) skip(depth int) {
	if depth <= 0 {
		r.fail("nesting too deep")
		return
	}
	c, ok := r.byte()
	if !ok {
		return
	}
	var n uint64     // bytes to skip
	var items uint64 // nested values to skip
	switch {
	case c < 0x80 || c >= 0xe0: // fixint
	case c <= 0x8f:
		items = 2 * uint64(c&0x0f)
	case c <= 0x9f:
		items = uint64(c & 0x0f)
	case c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == mpNil, c == mpFalse, c == mpTrue:
	case c == mpBin8, c == mpStr8:
		n = r.be(1)
	case c == mpBin16, c == mpStr16:
		n = r.be(2)
	case c == mpBin32, c == mpStr32:
		n = r.be(4)
	case c == mpExt8:
		n = r.be(1) + 1
	case c == mpExt16:
		n = r.be(2) + 1
	case c == mpExt32:
		n = r.be(4) + 1
	case c == mpFloat32:
		n = 4
	case c == mpFloat64:
		n = 8
	case c >= mpUint8 && c <= mpUint64:
		n = 1 << (c - mpUint8)
	case c >= mpInt8 && c <= mpInt64:
		n = 1 << (c - mpInt8)
	case c >= mpFixExt1 && c <= mpFixExt16:
		n = 1 + 1<<(c-mpFixExt1)
	case c == mpArray16:
		items = r.be(2)
	case c == mpArray32:
		items = r.be(4)
	case c == mpMap16:
		items = 2 * r.be(2)
	case c == mpMap32:
		items = 2 * r.be(4)
	default: // 0xc1 is never used
		r.off--
		r.fail("invalid msgpack type byte")
		return
	}
	if n > 0 {
		r.take(n)
	}
	if items > 0 {
		k := r.count(items, 1)
		for i := 0; i < k && r.err == nil; i++ {
			r.skip(depth - 1)
		}
	}
}
