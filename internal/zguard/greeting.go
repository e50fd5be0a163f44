package zguard

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// greet runs c's pre-handshake: the TLS handshake (with TLS), the peer's
// first byte, its signature, our greeting, the rest of the peer's, and the
// peer's READY read ahead; then it hands c to Accept. Each step refuses or
// fails c itself and reports whether c goes on.
func (l *listener) greet(c *conn) {
	defer l.wg.Done()
	if c.tc != nil && !c.serverTLS() {
		return
	}
	if !l.firstByte(c) || !c.exchangeGreetings() {
		return
	}
	ready, err := c.readAheadReady()
	if err != nil {
		c.failPeek(err)
		return
	}
	if ready != nil && !l.identifyAhead(c, ready) {
		return
	}
	l.handOver(c)
}

// serverTLS runs the server side of c's TLS handshake, bounded by the
// deadlines on the TCP conn (the first byte's, then the handshake's);
// closing c (listener Close) ends it at once. A peer that sent nothing
// sent no greeting; a plaintext dialer is told at once that this port
// needs TLS.
func (c *conn) serverTLS() bool {
	err := handshakeTLS(context.Background(), c.tc, c.tcp, c.firstByte)
	if err == nil {
		c.tlsUp.Store(true)
		return true
	}
	if errors.Is(err, ErrHandshakeTimeout) && !c.fb.got.Load() {
		err = ErrNoGreeting
	}
	if errors.Is(err, ErrTLSPlaintext) {
		_, _ = c.tcp.Write(tlsAlert)
	}
	c.reject(err)
	return false
}

// firstByte waits for the peer's first byte. Without TLS it comes under
// the first byte's deadline (none by then: no greeting), the read
// deadline then becomes the handshake's, and a TLS ClientHello is
// answered (refuseTLS).
func (l *listener) firstByte(c *conn) bool {
	g, err := c.br.Peek(1)
	if c.tc == nil {
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			c.reject(ErrNoGreeting)
			return false
		}
		_ = c.tcp.SetReadDeadline(c.deadline)
		if err == nil && looksLikeTLS(g) {
			l.refuseTLS(c)
			return false
		}
	}
	if err != nil {
		c.failPeek(err)
		return false
	}
	return true
}

// exchangeGreetings runs the staged greeting of ZMTP 3 (libzmq): the peer
// sends its 10-byte signature and waits for ours before it sends its
// version, and its version before the rest. Ours goes out whole once the
// peer's signature is valid; the rest of the peer's is checked when it
// came (ZMTP 3 or later, NULL).
func (c *conn) exchangeGreetings() bool {
	g, err := c.br.Peek(signatureLen)
	if err != nil {
		c.failPeek(err)
		return false
	}
	if !validSignature(g) {
		c.reject(ErrBadGreeting)
		return false
	}
	if err := c.sendGreeting(); err != nil {
		return false // failWrite closed c
	}
	if g, err = c.br.Peek(greetingLen); err != nil {
		c.failPeek(err)
		return false
	}
	if !validGreeting(g) || !nullGreeting(g) {
		c.reject(ErrBadGreeting)
		return false
	}
	return true
}

// failPeek is failRead for a read of the pre-handshake (a peek outside
// Read): it takes rmu.
func (c *conn) failPeek(err error) {
	c.rmu.Lock()
	_ = c.failRead(err, false)
	c.rmu.Unlock()
}

// handOver gives c to Accept, unless its handshake deadline passes, it
// closes, or the listener does first.
func (l *listener) handOver(c *conn) {
	t := time.NewTimer(time.Until(c.deadline))
	defer t.Stop()
	select {
	case l.ready <- c:
	case <-t.C:
		c.reject(ErrHandshakeTimeout)
	case <-c.closedCh:
	case <-l.done:
		c.closeWith(ErrClosedLocally, false)
	}
}

// refuseTLS answers a TLS ClientHello on a plaintext listener with the
// ZMTP signature, so the TLS side fails at once with "not TLS", and closes.
func (l *listener) refuseTLS(c *conn) {
	_ = c.tcp.SetWriteDeadline(c.deadline)
	_, _ = c.tcp.Write(zmtpSignature)
	c.reject(&TLSError{Kind: ErrTLSUnexpected, Detail: "the peer sent a TLS ClientHello to a mesh port without TLS"})
}

// firstByteConn is the TCP conn under a listener's TLS: until the first
// byte arrives the conn's deadline is the first byte's (FirstByteTimeout);
// the first byte read moves it to the handshake's.
type firstByteConn struct {
	net.Conn
	deadline time.Time // the handshake's deadline
	got      atomic.Bool
}

func (f *firstByteConn) Read(b []byte) (int, error) {
	n, err := f.Conn.Read(b)
	if n > 0 && !f.got.Load() {
		f.got.Store(true)
		_ = f.Conn.SetDeadline(f.deadline)
	}
	return n, err
}

// serverGreeting is the greeting a listener sends for zmq4 (ZMTP 3.0,
// NULL, not as-server): byte for byte the one zmq4 then writes itself,
// which the conn swallows (conn.swallow).
var serverGreeting = func() []byte {
	g := make([]byte, greetingLen)
	g[0], g[sigFooterAt], g[10] = sigHeader, sigFooter, 3
	copy(g[12:32], "NULL")
	return g
}()

// nullGreeting reports whether greeting g (64 bytes) is ZMTP 3 or later
// with the NULL mechanism: the only one zmq4 accepts here (it drops any
// other without closing the conn).
func nullGreeting(g []byte) bool {
	mech := g[12:32]
	return g[10] >= 3 && string(mech[:4]) == "NULL" && allZero(mech[4:])
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// sendGreeting writes serverGreeting ahead of zmq4, which then writes the
// same bytes (swallowed). A libzmq peer sends the rest of its greeting only
// after our signature and version, and every peer its READY only after
// our greeting.
func (c *conn) sendGreeting() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.writeLocked(serverGreeting); err != nil {
		return err
	}
	c.swallow = serverGreeting
	return nil
}

// readAheadReady waits until the peer's first command (its READY) is
// buffered whole, under the handshake deadline, so zmq4's handshake finds
// every byte it reads already there, and returns the command's body (still
// buffered: zmq4 reads it). A first frame that is no command, or is larger
// than the limit or the buffer, is left to the frame checks of Read (nil
// body).
func (c *conn) readAheadReady() ([]byte, error) {
	h, err := c.br.Peek(greetingLen + 1)
	if err != nil {
		return nil, err
	}
	flags := h[greetingLen]
	hl := headerLen(flags)
	if h, err = c.br.Peek(greetingLen + hl); err != nil {
		return nil, err
	}
	if flags&flagCommand == 0 {
		return nil, nil
	}
	size := uint64(h[greetingLen+1])
	if hl == maxHeaderLen {
		size = binary.BigEndian.Uint64(h[greetingLen+1:])
	}
	if size > handshakeCmdLimit || uint64(greetingLen+hl)+size > uint64(c.br.Size()) {
		return nil, nil
	}
	h, err = c.br.Peek(greetingLen + hl + int(size))
	if err != nil {
		return nil, err
	}
	return h[greetingLen+hl:], nil
}
