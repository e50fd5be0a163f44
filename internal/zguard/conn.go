package zguard

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxWriteChunk is the most written to the kernel under one write deadline,
// so WriteTimeout measures lack of progress, not the size of a message.
const maxWriteChunk = 1 << 20

// conn is the net.Conn zmq4 gets. Reads go through a buffered reader and
// a frame parser that refuses oversized frames before zmq4 sees their
// length; writes go through a buffered writer flushed per complete ZMTP
// message, every kernel write under a deadline. Both buffers are pooled
// while the connection is quiet (buffers.go).
//
// Locks: rmu and wmu are independent; mu is a leaf taken under either;
// listener.mu is never held while taking a conn lock.
type conn struct {
	raw      net.Conn  // what zmq4's bytes go through: tcp, or TLS over it
	tcp      net.Conn  // the TCP connection; closed directly
	tc       *tls.Conn // nil without TLS
	cfg      Config
	ln       *listener // nil for dialed conns
	remote   string
	deadline time.Time // end of the handshake

	// Accepted conns: the source and pool its pending slot was counted in
	// (pendingBook), the end of the wait for its first byte, and under
	// TLS the TCP conn that notices that byte.
	src       netip.Addr
	known     bool
	firstByte time.Time
	fb        *firstByteConn

	rmu  sync.Mutex // guards br, rp, rerr
	br   *lazyReader
	rp   frameParser
	rerr error

	wmu  sync.Mutex // guards bw, wp, werr, swallow
	bw   lazyWriter
	wp   frameParser
	werr error
	// swallow: what is left of the greeting a listener sent ahead of
	// zmq4 (sendGreeting); zmq4 writes the same bytes, which are dropped.
	swallow []byte

	// direct: after the handshake the owner reads messages itself
	// (readMessage) and zmq4's reader is parked until the conn closes.
	direct bool

	handshakeDone atomic.Bool // the peer's READY has been read
	tlsUp         atomic.Bool // the TLS handshake succeeded (or there is no TLS)
	adopted       atomic.Bool // zmq4 read again after the READY
	spoke         atomic.Bool // an accepted conn sent a message after its READY
	authed        atomic.Bool // the owner reported it authenticated (AwaitAuth)

	mu          sync.Mutex // guards the fields below
	identity    string
	adoptTimer  *time.Timer // handshakeExpired until the READY, then orphaned
	silentTimer *time.Timer // accepted conns: silent, until the first message
	authTimer   *time.Timer // accepted conns with AwaitAuth: authExpired, until authenticated
	closed      bool
	closedCh    chan struct{}
}

var _ net.Conn = (*conn)(nil)

// newConn guards tcp. With tc (TLS over tcp) every byte goes through tc;
// tlsUp says whether its handshake is already done.
func newConn(tcp net.Conn, tc *tls.Conn, tlsUp bool, cfg Config, ln *listener, start time.Time) *conn {
	var raw net.Conn = tcp
	if tc != nil {
		raw = tc
	}
	c := &conn{
		raw:      raw,
		tcp:      tcp,
		tc:       tc,
		cfg:      cfg,
		ln:       ln,
		remote:   raw.RemoteAddr().String(),
		deadline: start.Add(cfg.HandshakeTimeout),
		br:       newLazyReader(raw, cfg.ReadBufferSize),
		rp:       newFrameParser(cfg.MaxFrame),
		wp:       newFrameParser(math.MaxInt64),
		closedCh: make(chan struct{}),
	}
	c.rp.withCapture(handshakeCmdLimit)
	c.bw = lazyWriter{to: &deadlineWriter{c: raw, timeout: cfg.WriteTimeout}, size: cfg.WriteBufferSize}
	c.firstByte = c.deadline
	if ln != nil {
		// An accepted conn first has FirstByteTimeout to send anything.
		c.firstByte = start.Add(min(cfg.FirstByteTimeout, cfg.HandshakeTimeout))
	}
	_ = raw.SetReadDeadline(c.firstByte)
	c.tlsUp.Store(tc == nil || tlsUp)
	// zmq4 drops (without closing) a conn whose Open fails before the
	// READY too (a greeting it refuses): nobody reads it again, so the read
	// deadline alone would never end it.
	c.mu.Lock()
	c.adoptTimer = time.AfterFunc(time.Until(c.deadline), c.handshakeExpired)
	c.mu.Unlock()
	return c
}

// handshakeExpired closes a conn whose handshake has not ended by its
// deadline.
func (c *conn) handshakeExpired() {
	if !c.handshakeDone.Load() {
		c.reject(ErrHandshakeTimeout)
	}
}

// Read hands zmq4 the peer's bytes. At each frame boundary it waits for the
// whole header and checks its length before releasing any of it.
func (c *conn) Read(b []byte) (int, error) {
	if !c.adopted.Load() && c.handshakeDone.Load() {
		c.adopt()
	}
	if c.direct && c.handshakeDone.Load() {
		// zmq4 reads exact frame lengths, so it never took a byte past the
		// READY: everything after it is the owner's (readMessage).
		if c.ln != nil {
			return 0, c.pumpInbound() // on zmq4's reader goroutine, until the end
		}
		<-c.closedCh
		return 0, opError("read", c, net.ErrClosed)
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, c.rerr
	}
	if len(b) == 0 {
		return 0, nil
	}
	if c.ln == nil && c.tc == nil && c.rp.state == stateGreeting && c.rp.need == greetingLen {
		if g, err := c.br.Peek(1); err == nil && looksLikeTLSRecord(g[0]) {
			return 0, c.failRead(answeredWithTLS(), true) // a dialed TLS port
		}
	}
	if c.rp.atHeader() {
		if err := c.checkHeader(); err != nil {
			return 0, err
		}
	}
	n, rerr := c.br.Read(b)
	for off := 0; off < n; {
		k, ev, err := c.rp.next(b[off:n])
		off += k
		if err != nil {
			return 0, c.failRead(err, true)
		}
		if ev == eventFrame && c.rp.command() && !c.handshakeDone.Load() {
			if err := c.onHandshakeCommand(c.rp.body); err != nil {
				return 0, c.failRead(err, true)
			}
		} else if ev == eventFrame && c.silentTimer != nil && !c.spoke.Load() && !c.rp.command() {
			c.spoke.Store(true) // the first message: it is not silent
		}
	}
	if rerr != nil {
		return n, c.failRead(rerr, false)
	}
	return n, nil
}

// checkHeader peeks at the next frame header and refuses it when it
// announces more than the limit.
func (c *conn) checkHeader() error {
	h, err := c.br.Peek(1)
	if err != nil {
		return c.failRead(err, false)
	}
	h, err = c.br.Peek(headerLen(h[0]))
	if err != nil {
		return c.failRead(err, false)
	}
	probe := c.rp
	probe.body = nil
	if _, _, err := probe.next(h); err != nil {
		return c.failRead(err, true)
	}
	return nil
}

// onHandshakeCommand runs on every command read before the handshake ends.
func (c *conn) onHandshakeCommand(body []byte) error {
	name, identity, err := sniffCommand(body)
	if err != nil {
		return err
	}
	if name != "READY" && name != "INITIATE" {
		return nil
	}
	if c.ln != nil {
		if _, err := c.ln.identify(c, identity); err != nil {
			return err
		}
	} else {
		c.mu.Lock()
		c.identity = identity
		c.mu.Unlock()
	}
	c.handshakeDone.Store(true)
	c.rp.capture = false
	c.rp.body = nil
	_ = c.raw.SetReadDeadline(time.Time{})
	if c.ln != nil && !c.cfg.AwaitAuth {
		c.ln.handshakeEnded(c) // else pending until Inbound.Authenticated
	}
	// zmq4 drops (without closing) a conn whose Open fails after the READY,
	// e.g. on incompatible socket types; such a conn is never read again.
	c.mu.Lock()
	if c.adoptTimer != nil {
		c.adoptTimer.Stop() // handshakeExpired
	}
	if !c.closed {
		c.adoptTimer = time.AfterFunc(c.cfg.HandshakeTimeout, c.orphaned)
		if c.ln != nil && c.cfg.SpeakFirst {
			c.silentTimer = time.AfterFunc(c.cfg.HandshakeTimeout, c.silent)
		}
	}
	c.mu.Unlock()
	return nil
}

// silent refuses an accepted conn that sent no message within the
// handshake timeout of its READY: a stranger that connects and says
// nothing holds no connection for long.
func (c *conn) silent() {
	if !c.spoke.Load() {
		c.reject(ErrSilent)
	}
}

// authExpired refuses an accepted conn (AwaitAuth) that its owner has not
// reported authenticated within AuthTimeout of its accept.
func (c *conn) authExpired() {
	if !c.authed.Load() {
		c.reject(ErrNotAuthenticated)
	}
}

// authenticate ends the wait for authentication (Inbound.Authenticated).
func (c *conn) authenticate() {
	c.authed.Store(true)
	c.mu.Lock()
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	c.mu.Unlock()
}

// adopt records that zmq4 reads the conn after its handshake.
func (c *conn) adopt() {
	c.adopted.Store(true)
	c.mu.Lock()
	if c.adoptTimer != nil {
		c.adoptTimer.Stop()
	}
	c.mu.Unlock()
}

func (c *conn) orphaned() {
	if !c.adopted.Load() {
		c.reject(ErrHandshakeTimeout)
	}
}

// failRead closes the conn for a read-side reason and returns the error for
// zmq4. guard says the reason is a guard's refusal.
func (c *conn) failRead(err error, guard bool) error {
	if !guard && c.tc != nil && !c.handshakeDone.Load() {
		// TLS 1.3: a server refusing our certificate says so in an alert
		// that arrives with the first read after our handshake ended.
		if te := remoteAlert(err); te != nil {
			err, guard = te, true
		}
	}
	switch {
	case guard:
		c.reject(err)
	case !c.handshakeDone.Load() && errors.Is(err, os.ErrDeadlineExceeded):
		err = ErrHandshakeTimeout
		c.reject(err)
	default:
		c.closeWith(err, false)
		c.rerr = err // io.EOF and net errors keep their meaning for zmq4
		return err
	}
	c.rerr = opError("read", c, err)
	return c.rerr
}

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

func opError(op string, c *conn, err error) error {
	return &net.OpError{Op: op, Net: Scheme, Source: c.raw.LocalAddr(), Addr: c.raw.RemoteAddr(), Err: err}
}

// Close closes the connection; zmq4 calls it, possibly more than once.
func (c *conn) Close() error {
	c.closeWith(ErrClosedLocally, false)
	return nil
}

func (c *conn) reject(reason error) { c.closeWith(reason, true) }

// closeWith closes the conn once, releases its listener state and reports
// it.
func (c *conn) closeWith(reason error, rejected bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.closedCh)
	if c.adoptTimer != nil {
		c.adoptTimer.Stop()
	}
	if c.silentTimer != nil {
		c.silentTimer.Stop()
	}
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	ev := ConnEvent{Identity: c.identity, Remote: c.remote, Reason: reason}
	c.mu.Unlock()

	// The TCP connection is closed directly, never through TLS: no
	// close_notify is needed (ZMTP frames delimit themselves, and a TLS
	// reader sees io.EOF at a record boundary), and none can block here.
	var te *TLSError
	switch {
	case rejected && (errors.As(reason, &te) || errors.Is(reason, ErrDuplicateIdentity)):
		lingerClose(c.tcp) // let our TLS alert, ZMTP signature or ERROR reach the peer
	case errors.Is(reason, ErrDisconnected):
		lingerClose(c.tcp) // the refusal just written must reach the peer
	case rejected || !errors.Is(reason, ErrClosedLocally) || !c.tlsUp.Load():
		_ = c.tcp.Close()
	default:
		lingerClose(c.tcp)
	}
	if c.ln != nil {
		c.ln.forget(c, ev.Identity)
	}
	if rejected && c.cfg.OnRejected != nil {
		c.cfg.OnRejected(ev)
	}
	if c.cfg.OnConnClosed != nil {
		c.cfg.OnConnClosed(ev)
	}
}

// closeLinger bounds how long a closed connection drains what the peer
// still sends.
const closeLinger = 250 * time.Millisecond

// lingerClose ends a connection we close on our own without losing what
// we sent last (a goodbye): closing a socket whose receive buffer holds
// unread bytes sends a reset, and a reset makes the peer's kernel drop
// what the peer has not read yet. So: send FIN after our last bytes, read
// and discard until the peer closes too (or closeLinger passes), then
// close. It never blocks its caller.
func lingerClose(raw net.Conn) {
	tcp, ok := raw.(interface{ CloseWrite() error })
	if !ok {
		_ = raw.Close()
		return
	}
	_ = tcp.CloseWrite()
	_ = raw.SetReadDeadline(time.Now().Add(closeLinger))
	go func() {
		_, _ = io.Copy(io.Discard, raw)
		_ = raw.Close()
	}()
}

func (c *conn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// The deadline setters are no-ops: the guard owns the deadlines (zmq4 never
// sets any).
func (c *conn) SetDeadline(time.Time) error      { return nil }
func (c *conn) SetReadDeadline(time.Time) error  { return nil }
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

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
