package zguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkReader returns its data in pieces of random length, as a socket
// does.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rng.IntN(3000))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// The pooled reader gives the bytes bufio.Reader gives, whatever the mix
// of Peek, Discard and Read and however the socket splits them.
func TestLazyReaderMatchesBufio(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		data := make([]byte, 1+rng.IntN(200_000))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		size := 64 + rng.IntN(8192)
		want := bufio.NewReaderSize(&chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, 2))}, size)
		got := newLazyReader(&chunkReader{data: data, rng: rand.New(rand.NewPCG(seed, 3))}, size)
		if want.Size() != got.Size() {
			t.Fatalf("seed %d: Size %d, bufio %d", seed, got.Size(), want.Size())
		}
		for step := 0; ; step++ {
			var gb, wb []byte
			var gerr, werr error
			op := rng.IntN(3)
			n := rng.IntN(size + 64)
			if rng.IntN(4) == 0 {
				n = rng.IntN(40)
			}
			switch op {
			case 0:
				gb, gerr = got.Peek(n)
				wb, werr = want.Peek(n)
				gb, wb = bytes.Clone(gb), bytes.Clone(wb)
			case 1:
				var gn, wn int
				gn, gerr = got.Discard(n)
				wn, werr = want.Discard(n)
				gb, wb = []byte{byte(gn), byte(gn >> 8)}, []byte{byte(wn), byte(wn >> 8)}
			case 2:
				// Reads are compared by content over io.ReadFull: a single
				// Read may legally return fewer bytes than bufio's.
				gb, wb = make([]byte, n), make([]byte, n)
				var gn, wn int
				gn, gerr = io.ReadFull(got, gb)
				wn, werr = io.ReadFull(want, wb)
				gb, wb = gb[:gn], wb[:wn]
			}
			if !bytes.Equal(gb, wb) || !errors.Is(gerr, werr) {
				t.Fatalf("seed %d step %d op %d n %d: got %d bytes (%v), bufio %d bytes (%v)", seed, step, op, n, len(gb), gerr, len(wb), werr)
			}
			if werr == io.EOF || (werr != nil && op != 0) {
				break
			}
		}
	}
}

// A reader waits for bytes in its small buffer: a run of small messages
// never takes a pooled buffer, and a large one gives it back once the
// traffic is small again.
func TestLazyReaderPoolsOnlyUnderLoad(t *testing.T) {
	var stream bytes.Buffer
	small := bytes.Repeat([]byte{1}, 100)
	large := bytes.Repeat([]byte{2}, 20_000)
	for range 10 {
		stream.Write(small)
	}
	stream.Write(large)
	for range 10 {
		stream.Write(small)
	}
	// A socket returns what one write sent: one message per read.
	r := newLazyReader(&msgReader{msgs: splitMsgs(stream.Bytes(), 10, 100, 20_000)}, 64<<10)
	buf := make([]byte, 100)
	for range 10 {
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		if r.pooled() {
			t.Fatal("small messages took a pooled buffer")
		}
	}
	big := make([]byte, 20_000)
	if _, err := r.Peek(4000); err != nil { // a header that asks for more
		t.Fatal(err)
	}
	if !r.pooled() {
		t.Fatal("a large message was not read into a pooled buffer")
	}
	if _, err := io.ReadFull(r, big); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
	}
	if r.pooled() {
		t.Fatal("the pooled buffer was kept after the traffic went small again")
	}
}

type msgReader struct{ msgs [][]byte }

func (m *msgReader) Read(p []byte) (int, error) {
	if len(m.msgs) == 0 {
		return 0, io.EOF
	}
	n := copy(p, m.msgs[0])
	if m.msgs[0] = m.msgs[0][n:]; len(m.msgs[0]) == 0 {
		m.msgs = m.msgs[1:]
	}
	return n, nil
}

func splitMsgs(b []byte, nSmall, smallLen, largeLen int) [][]byte {
	var out [][]byte
	for range nSmall {
		out, b = append(out, b[:smallLen]), b[smallLen:]
	}
	out, b = append(out, b[:largeLen]), b[largeLen:]
	for len(b) > 0 {
		out, b = append(out, b[:smallLen]), b[smallLen:]
	}
	return out
}

// A writer takes a pooled buffer only for a message larger than its small
// one, and holds it only until the flush that ends the message.
func TestLazyWriterReturnsBufferAfterFlush(t *testing.T) {
	var out bytes.Buffer
	w := lazyWriter{to: &out, size: 4096}
	small := []byte("hello")
	large := bytes.Repeat([]byte{7}, 3000)
	for _, msg := range [][]byte{small, large, small} {
		out.Reset()
		// A header, then the body: two writes of one message.
		if _, err := w.Write(msg[:1]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(msg[1:]); err != nil {
			t.Fatal(err)
		}
		if w.pooled() != (len(msg) > smallWriteBuf) {
			t.Fatalf("a %d-byte message: pooled=%v", len(msg), w.pooled())
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if w.pooled() || !bytes.Equal(out.Bytes(), msg) {
			t.Fatalf("after Flush: pooled=%v, %d bytes out of %d", w.pooled(), out.Len(), len(msg))
		}
	}
}
