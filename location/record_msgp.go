package location

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// msgReader reads the subset of msgpack a record uses from a string,
// checking every declared length against the bytes that remain before
// using it, so nothing is allocated beyond the input's size.
type msgReader struct {
	b   string
	off int
}

var errShort = errors.New("truncated")

func (r *msgReader) take(n int) (string, error) {
	if n < 0 || n > len(r.b)-r.off {
		return "", errShort
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v, nil
}

func (r *msgReader) code() (byte, error) {
	v, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// be reads an n-byte big-endian unsigned integer (n is 1, 2, 4 or 8).
func (r *msgReader) be(n int) (uint64, error) {
	v, err := r.take(n)
	if err != nil {
		return 0, err
	}
	var buf [8]byte
	copy(buf[8-n:], v)
	return binary.BigEndian.Uint64(buf[:]), nil
}

// length reads the length following a str8/16/32, bin8/16/32, array16/32
// or map16/32 code, by its width in bytes.
func (r *msgReader) length(width int) (int, error) {
	v, err := r.be(width)
	if err != nil {
		return 0, err
	}
	if v > uint64(len(r.b)-r.off) { // more than what remains: a lie
		return 0, errShort
	}
	return int(v), nil
}

func (r *msgReader) mapLen() (n int, isNil bool, err error) {
	return r.containerLen(0x80, 0xde, "a map")
}

// containerLen reads the length of a map or an array: fix is its fixed
// form's first code (16 lengths), c16 its 16-bit form (c16+1 the 32-bit).
func (r *msgReader) containerLen(fix, c16 byte, what string) (n int, isNil bool, err error) {
	c, err := r.code()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c == 0xc0:
		return 0, true, nil
	case c >= fix && c <= fix+0x0f:
		return int(c & 0x0f), false, nil
	case c == c16:
		n, err = r.length(2)
	case c == c16+1:
		n, err = r.length(4)
	default:
		return 0, false, fmt.Errorf("code 0x%02x is not %s", c, what)
	}
	return n, false, err
}

// str reads a str or bin of at most max bytes.
func (r *msgReader) str(max int) (string, error) {
	c, err := r.code()
	if err != nil {
		return "", err
	}
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, err = r.length(1)
	case c == 0xda || c == 0xc5:
		n, err = r.length(2)
	case c == 0xdb || c == 0xc6:
		n, err = r.length(4)
	default:
		return "", fmt.Errorf("code 0x%02x is not a string", c)
	}
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("string of %d bytes, more than %d", n, max)
	}
	v, err := r.take(n)
	return strings.Clone(v), err // the decoded record keeps nothing of s
}

// uint reads a non-negative integer of at most max, in any msgpack width.
func (r *msgReader) uint(max uint64) (uint64, error) {
	c, err := r.code()
	if err != nil {
		return 0, err
	}
	var v uint64
	switch {
	case c <= 0x7f:
		v = uint64(c)
	case c >= 0xcc && c <= 0xcf: // uint8..uint64
		v, err = r.be(1 << (c - 0xcc))
	case c >= 0xd0 && c <= 0xd3: // int8..int64: only non-negative values
		w := 1 << (c - 0xd0)
		v, err = r.be(w)
		if err == nil && v>>(8*w-1) != 0 {
			return 0, fmt.Errorf("negative integer")
		}
	default:
		return 0, fmt.Errorf("code 0x%02x is not an unsigned integer", c)
	}
	if err != nil {
		return 0, err
	}
	if v > max {
		return 0, fmt.Errorf("integer %d above %d", v, max)
	}
	return v, nil
}

func (r *msgReader) bool() (bool, error) {
	c, err := r.code()
	if err != nil {
		return false, err
	}
	switch c {
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	}
	return false, fmt.Errorf("code 0x%02x is not a bool", c)
}

// servers reads the Servers map (nil stays nil); validate checks names and
// weights.
func (r *msgReader) servers() (map[string]uint16, error) {
	n, isNil, err := r.mapLen()
	if err != nil || isNil {
		return nil, err
	}
	if n > maxServers {
		return nil, fmt.Errorf("%d servers, more than %d", n, maxServers)
	}
	m := make(map[string]uint16, n) // n ≤ maxServers and ≤ the bytes left
	for range n {
		name, err := r.str(maxNameLen)
		if err != nil {
			return nil, err
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("server %q twice", name)
		}
		w, err := r.uint(1<<16 - 1)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		m[name] = uint16(w)
	}
	return m, nil
}

func (r *msgReader) arrayLen() (n int, isNil bool, err error) {
	return r.containerLen(0x90, 0xdc, "an array")
}

// kinds reads the Spot kinds of a descriptor: nil (msgpack nil, the same
// as an absent field) or a list of at most maxKinds names; validate checks
// each name and the order.
func (r *msgReader) kinds() ([]string, error) {
	n, isNil, err := r.arrayLen()
	if err != nil || isNil {
		return nil, err
	}
	if n > maxKinds {
		return nil, fmt.Errorf("%d kinds, more than %d", n, maxKinds)
	}
	out := make([]string, 0, n) // n ≤ maxKinds: non-nil even when empty
	for range n {
		k, err := r.str(maxNameLen)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// skip passes over one value of a field this version does not know (a
// newer writer's): scalars, strings and containers nested at most
// maxSkipDepth deep. Nothing is allocated.
func (r *msgReader) skip(depth int) error {
	if depth > maxSkipDepth {
		return fmt.Errorf("unknown value nested deeper than %d", maxSkipDepth)
	}
	c, err := r.code()
	if err != nil {
		return err
	}
	var n, items int // n bytes of payload, or items values to skip
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixint, nil, bool
		return nil
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c >= 0x90 && c <= 0x9f:
		items = int(c & 0x0f)
	case c >= 0x80 && c <= 0x8f:
		items = 2 * int(c&0x0f)
	case c == 0xcc || c == 0xd0:
		n = 1
	case c == 0xcd || c == 0xd1:
		n = 2
	case c == 0xce || c == 0xd2 || c == 0xca:
		n = 4
	case c == 0xcf || c == 0xd3 || c == 0xcb:
		n = 8
	case c == 0xd9 || c == 0xc4:
		n, err = r.length(1)
	case c == 0xda || c == 0xc5:
		n, err = r.length(2)
	case c == 0xdb || c == 0xc6:
		n, err = r.length(4)
	case c == 0xdc:
		items, err = r.length(2)
	case c == 0xdd:
		items, err = r.length(4)
	case c == 0xde:
		items, err = r.length(2)
		items *= 2
	case c == 0xdf:
		items, err = r.length(4)
		items *= 2
	default: // ext types and the reserved code: not in a record
		return fmt.Errorf("code 0x%02x in an unknown field", c)
	}
	if err != nil {
		return err
	}
	if _, err := r.take(n); err != nil {
		return err
	}
	if items > len(r.b)-r.off { // every item takes at least one byte
		return errShort
	}
	for range items {
		if err := r.skip(depth + 1); err != nil {
			return err
		}
	}
	return nil
}
