package msgp

import (
	"errors"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zlink-go/zlink/internal/zerr"
)

func enc(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every msgpack form another encoder writes reads back; Skip passes over
// each value exactly.
func TestReader_ReadsEveryForm(t *testing.T) {
	for _, u := range []uint64{0, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64} {
		r := Reader{B: enc(t, u)}
		if got := r.Uint(math.MaxUint64); got != u || r.Err != nil || r.Remaining() != 0 {
			t.Errorf("uint %d: %d, %v", u, got, r.Err)
		}
	}
	for _, n := range []int{0, 31, 32, 255, 256, 65536} {
		s := string(make([]byte, n))
		r := Reader{B: enc(t, s)}
		if got := r.StrBytes(); len(got) != n || r.Err != nil {
			t.Errorf("str of %d: %d, %v", n, len(got), r.Err)
		}
		r = Reader{B: enc(t, []byte(s))}
		if got := r.Text(n); len(got) != n || r.Err != nil {
			t.Errorf("bin of %d as text: %d, %v", n, len(got), r.Err)
		}
	}
	for _, v := range []any{nil, true, 1.5, float32(2), int8(-3), []any{1, "a", []any{nil}}, map[string]any{"a": map[string]any{"b": 1}}, string(make([]byte, 300))} {
		b := append(enc(t, v), 0x01)
		r := Reader{B: b}
		r.Skip(4)
		if r.Err != nil || r.Remaining() != 1 {
			t.Errorf("skip %T: %v, %d left", v, r.Err, r.Remaining())
		}
	}
}

// A problem sticks, names its offset, matches ErrProtocol; after it every
// read returns zero values and consumes nothing.
func TestReader_FirstProblemSticks(t *testing.T) {
	r := Reader{B: []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}} // str32 longer than the input
	if r.StrBytes() != nil || r.Err == nil {
		t.Fatal("a lying length was read")
	}
	var e *Error
	if !errors.As(r.Err, &e) || !errors.Is(r.Err, zerr.ErrProtocol) || e.Offset != 5 {
		t.Fatalf("error %v (%+v)", r.Err, e)
	}
	off := r.Off
	if _, ok := r.Byte(); ok || r.Off != off || r.Err != error(e) {
		t.Fatal("a read after the problem consumed input or replaced the error")
	}
	r = Reader{B: []byte{0x91, 0x91, 0x91, 0x91, 0x91, 0x01}} // nested five deep
	r.Skip(3)
	if r.Err == nil {
		t.Fatal("skip went deeper than its bound")
	}
	r = Reader{B: []byte{0xdd, 0xff, 0xff, 0xff, 0xff}} // array32 of 4 G elements, no bytes
	if r.ArrayHeader() != 0 || r.Err == nil {
		t.Fatal("an element count larger than the input was accepted")
	}
}

// No input makes a read panic, loop past the input or allocate for a
// length the input does not hold.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc0, 0xc3})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc7, 0x02, 0x01, 0xaa, 0xbb})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Reader{B: b}
		r.Skip(8)
		if r.Off > len(b) {
			t.Fatalf("offset %d of %d, err %v", r.Off, len(b), r.Err)
		}
		r = Reader{B: b}
		if n, _ := r.MapHeader(); n > len(b) {
			t.Fatalf("map of %d entries from %d bytes", n, len(b))
		}
		for r.Err == nil && r.Remaining() > 0 {
			_ = r.Text(1 << 20)
			_ = r.Uint(math.MaxUint64)
		}
	})
}
