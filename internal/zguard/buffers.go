package zguard

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// Buffers sized to traffic. A connection holds no read or write buffer of
// Config.ReadBufferSize / WriteBufferSize while it is quiet: an idle mesh
// of N nodes keeps N×(N-1) connections open, and buffers held by each
// would dominate a node's heap. Both buffers come from a pool when bytes
// move and go back to it once they are drained:
//
//   - the writer takes a buffer for a message and returns it after the
//     flush that ends the message (every complete ZMTP message is flushed);
//   - the reader waits for bytes in a small buffer of its own
//     (smallReadBuf). A read that fills it, or a frame that does not fit
//     in it, moves the unread bytes into a pooled buffer; that buffer is
//     kept while reads keep returning more than the small buffer holds (a
//     busy connection) and goes back to the pool at the first read that
//     would wait after a small one (the connection went quiet).
//
// The pool is a sync.Pool: what an idle process does not use is given back
// to the garbage collector.

// smallReadBuf is what a quiet connection's reader holds: enough for a
// heartbeat or a small request or reply.
const smallReadBuf = 512

// bufPools are the pools of read and write buffers, one per size.
var bufPools sync.Map // int → *sync.Pool of *[]byte

func bufPool(size int) *sync.Pool {
	if p, ok := bufPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := bufPools.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, size); return &b }})
	return p.(*sync.Pool)
}

// lazyReader is a bufio.Reader whose buffer is pooled while the connection
// is quiet (see above). Peek, Discard, Read and Size behave as bufio's; it
// is used under the conn's rmu.
type lazyReader struct {
	rd    io.Reader
	size  int     // the full buffer's size (Config.ReadBufferSize)
	buf   []byte  // small[:] or *big
	big   *[]byte // the pooled buffer in use; nil while small
	r, w  int     // buf[r:w] is unread
	err   error   // the last read error, returned once the buffer is drained
	lastN int     // bytes the last read returned
	small [smallReadBuf]byte
}

func newLazyReader(rd io.Reader, size int) *lazyReader {
	b := &lazyReader{rd: rd, size: size}
	b.buf = b.smallBuf()
	return b
}

var errNegativeCount = errors.New("zguard: negative count")

// smallBuf is the small buffer, never larger than the full one.
func (b *lazyReader) smallBuf() []byte { return b.small[:min(smallReadBuf, b.size)] }

// Size returns the size of the full buffer: the most Peek can return.
func (b *lazyReader) Size() int { return b.size }

// buffered is the number of unread bytes held.
func (b *lazyReader) buffered() int { return b.w - b.r }

// pooled reports whether the reader holds a pooled buffer (tests).
func (b *lazyReader) pooled() bool { return b.big != nil }

// grow moves the unread bytes into a pooled buffer of the full size.
func (b *lazyReader) grow() {
	big := bufPool(b.size).Get().(*[]byte)
	n := copy(*big, b.buf[b.r:b.w])
	b.big, b.buf, b.r, b.w = big, *big, 0, n
}

// shrink gives the pooled buffer back; the reader must be empty.
func (b *lazyReader) shrink() {
	bufPool(b.size).Put(b.big)
	b.big, b.buf, b.r, b.w = nil, b.smallBuf(), 0, 0
}

// fill reads once more into the buffer (at least one byte or an error).
// need is how many unread bytes the caller wants in all: more than the
// small buffer holds takes a pooled one.
func (b *lazyReader) fill(need int) {
	switch {
	case b.r == b.w:
		b.r, b.w = 0, 0
		if b.big != nil && b.lastN < smallReadBuf && need <= smallReadBuf {
			b.shrink() // quiet: wait for bytes in the small buffer
		}
	case b.r > 0:
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	if b.big == nil && (need > len(b.buf) || b.w == len(b.buf)) {
		b.grow()
	}
	for range 100 {
		n, err := b.rd.Read(b.buf[b.w:])
		if n < 0 {
			panic(errNegativeCount)
		}
		b.w += n
		b.lastN = n
		if err != nil {
			b.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	b.err = io.ErrNoProgress
}

func (b *lazyReader) readErr() error {
	err := b.err
	b.err = nil
	return err
}

// Peek returns the next n bytes without advancing (bufio.Reader.Peek).
func (b *lazyReader) Peek(n int) ([]byte, error) {
	if n < 0 {
		return nil, bufio.ErrNegativeCount
	}
	want := min(n, b.size)
	for b.w-b.r < want && b.err == nil {
		b.fill(want)
	}
	if n > b.size {
		return b.buf[b.r:b.w], bufio.ErrBufferFull
	}
	if b.w-b.r < n {
		return b.buf[b.r:b.w], b.readErr()
	}
	return b.buf[b.r : b.r+n], nil
}

// Discard skips the next n bytes (bufio.Reader.Discard).
func (b *lazyReader) Discard(n int) (int, error) {
	if n < 0 {
		return 0, bufio.ErrNegativeCount
	}
	done := 0
	for {
		k := min(b.w-b.r, n-done)
		b.r += k
		done += k
		if done == n {
			return done, nil
		}
		if b.err != nil {
			return done, b.readErr()
		}
		b.fill(min(n-done, b.size)) // a long skip is read in large pieces
	}
}

// Read reads into p (bufio.Reader.Read): what is buffered, else at most
// one read from the connection, straight into p when p is at least as
// large as the buffer.
func (b *lazyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		if b.buffered() > 0 {
			return 0, nil
		}
		return 0, b.readErr()
	}
	if b.r == b.w {
		if b.err != nil {
			return 0, b.readErr()
		}
		if b.big != nil && b.lastN < smallReadBuf {
			b.shrink()
		}
		if len(p) >= len(b.buf) {
			n, err := b.rd.Read(p)
			if n < 0 {
				panic(errNegativeCount)
			}
			b.lastN = n
			return n, err
		}
		b.fill(1)
		if b.r == b.w {
			return 0, b.readErr()
		}
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	return n, nil
}

// release gives the pooled buffer back when nothing is unread (the conn
// closed).
func (b *lazyReader) release() {
	if b.big != nil && b.r == b.w {
		b.shrink()
	}
}

// lazyWriter buffers a message in a small buffer of its own and moves to
// a pooled bufio.Writer only for a message that does not fit; that one is
// returned once the message is flushed. It is used under the conn's wmu.
type lazyWriter struct {
	to    io.Writer
	size  int
	bw    *bufio.Writer // nil unless a large message is being written
	n     int           // bytes held in small
	small [smallWriteBuf]byte
}

// smallWriteBuf holds a heartbeat, a small request or reply, a ZMTP
// command.
const smallWriteBuf = 512

var writerPools sync.Map // int → *sync.Pool of *bufio.Writer

func writerPool(size int) *sync.Pool {
	if p, ok := writerPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := writerPools.LoadOrStore(size, &sync.Pool{New: func() any { return bufio.NewWriterSize(nil, size) }})
	return p.(*sync.Pool)
}

func (w *lazyWriter) Write(p []byte) (int, error) {
	if w.bw == nil {
		if w.n+len(p) <= len(w.small) {
			w.n += copy(w.small[w.n:], p)
			return len(p), nil
		}
		w.bw = writerPool(w.size).Get().(*bufio.Writer)
		w.bw.Reset(w.to)
		if w.n > 0 {
			k := w.n
			w.n = 0
			if _, err := w.bw.Write(w.small[:k]); err != nil {
				return 0, err
			}
		}
	}
	return w.bw.Write(p)
}

// buffered reports whether bytes wait to be flushed.
func (w *lazyWriter) buffered() bool {
	return w.n > 0 || w.bw != nil && w.bw.Buffered() > 0
}

// Flush writes what is buffered and, when all of it went out, returns the
// pooled buffer.
func (w *lazyWriter) Flush() error {
	if w.bw == nil {
		if w.n == 0 {
			return nil
		}
		_, err := w.to.Write(w.small[:w.n])
		w.n = 0
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	w.bw.Reset(nil)
	writerPool(w.size).Put(w.bw)
	w.bw = nil
	return nil
}

// pooled reports whether the writer holds a pooled buffer (tests).
func (w *lazyWriter) pooled() bool { return w.bw != nil }
