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
		if now := time.Now(); w.until.Sub(now) < w.timeout-w.timeout/8 {
			w.until = now.Add(w.timeout)
			if err := w.c.SetWriteDeadline(w.until); err != nil {
				return n, err
			}
		}
		k, err := w.c.Write(p[n:end])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
