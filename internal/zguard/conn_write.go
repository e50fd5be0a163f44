package zguard

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// maxWriteChunk is the most written to the kernel under one write deadline,
// so WriteTimeout measures lack of progress, not the size of a message.
const maxWriteChunk = 1 << 20

// Write buffers b and flushes after each complete ZMTP message (the
// greeting, a command, or a frame without MORE).
func (c *conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return 0, c.werr
	}
	if len(c.swallow) == 0 {
		return c.writeLocked(b)
	}
	k := min(len(b), len(c.swallow))
	if !bytes.Equal(b[:k], c.swallow[:k]) {
		return 0, c.failWrite(errGreetingDiffers)
	}
	c.swallow = c.swallow[k:]
	if k == len(b) {
		return k, nil
	}
	n, err := c.writeLocked(b[k:])
	return k + n, err
}

// errGreetingDiffers: zmq4 wrote another greeting than the one a listener
// sent ahead of it (serverGreeting no longer matches zmq4's).
var errGreetingDiffers = errors.New("zlink: zmq4's greeting differs from the one sent ahead of it")

// writeLocked is Write with wmu held and no write error yet.
func (c *conn) writeLocked(b []byte) (int, error) {
	select {
	case <-c.closedCh:
		c.werr = opError("write", c, net.ErrClosed)
		return 0, c.werr
	default:
	}
	written := 0
	for written < len(b) {
		k, ev, err := c.wp.next(b[written:])
		if err != nil {
			return written, c.failWrite(err)
		}
		m, err := c.bw.Write(b[written : written+k])
		written += m
		if err != nil {
			return written, c.failWrite(err)
		}
		if ev == eventGreeting || ev == eventFrame && (c.wp.command() || !c.wp.more()) {
			if err := c.bw.Flush(); err != nil {
				return written, c.failWrite(err)
			}
		}
	}
	return written, nil
}

func (c *conn) failWrite(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: %v", ErrWriteTimeout, err)
	}
	c.closeWith(err, false)
	// A non-timeout net.Error makes zmq4 mark its Conn closed at once.
	c.werr = opError("write", c, err)
	return c.werr
}

// deadlineWriter writes to the kernel in chunks of at most maxWriteChunk,
// each under its own deadline: at least 7/8 of the timeout from the
// chunk's start (the deadline set last is kept while that much of it is
// left, so a busy connection does not reset its timer for every write).
type deadlineWriter struct {
	c       net.Conn
	timeout time.Duration
	until   time.Time // the write deadline set last
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		end := min(len(p), n+maxWriteChunk)
		if err := w.arm(); err != nil {
			return n, err
		}
		k, err := w.c.Write(p[n:end])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// arm sets the write deadline unless the one set last has at least 7/8 of
// the timeout left.
func (w *deadlineWriter) arm() error {
	if now := time.Now(); w.until.Sub(now) < w.timeout-w.timeout/8 {
		w.until = now.Add(w.timeout)
		return w.c.SetWriteDeadline(w.until)
	}
	return nil
}

// disarm clears the write deadline for a write that never blocks: it needs
// none, and one in the past (the last write was longer ago than the
// timeout) fails every write. The next blocking write arms it again. At
// rest it is cleared once, not set at every heartbeat.
func (w *deadlineWriter) disarm() error {
	if w.until.IsZero() {
		return nil
	}
	w.until = time.Time{}
	return w.c.SetWriteDeadline(w.until)
}
