package zguard

import (
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is the net.Conn zmq4 gets. Reads go through a buffered reader and
// a frame parser that refuses oversized frames before zmq4 sees their
// length; writes go through a buffered writer flushed per complete ZMTP
// message, every kernel write under a deadline. Both buffers are pooled
// while the connection is quiet (buffers.go).
//
// Locks: rmu and wmu are independent; mu is a leaf taken under either;
// listener.mu is never held while taking a conn lock.
type conn struct {
	raw net.Conn  // what zmq4's bytes go through: tcp, or TLS over it
	tcp net.Conn  // the TCP connection; closed directly
	tc  *tls.Conn // nil without TLS
	// rc is tcp's file descriptor for writes that never block
	// (tryWriteMessage); nil under TLS.
	rc       syscall.RawConn
	try      tryWrite // under wmu
	cfg      Config
	ln       *listener // nil for dialed conns
	remote   string
	serial   uint64    // this conn's number in the process (ConnKey)
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
	dw   *deadlineWriter    // under bw
	whdr [maxHeaderLen]byte // writeMessage's frame header
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
		serial:   connSerials.Add(1),
		deadline: start.Add(cfg.HandshakeTimeout),
		br:       newLazyReader(raw, cfg.ReadBufferSize),
		rp:       newFrameParser(cfg.MaxFrame),
		wp:       newFrameParser(math.MaxInt64),
		closedCh: make(chan struct{}),
	}
	c.rp.withCapture(handshakeCmdLimit)
	if sc, ok := tcp.(syscall.Conn); ok && tc == nil {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
			c.try.init()
		}
	}
	c.dw = &deadlineWriter{c: raw, timeout: cfg.WriteTimeout}
	c.bw = lazyWriter{to: c.dw, size: cfg.WriteBufferSize}
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

// Read hands zmq4 the peer's bytes. At each frame boundary it waits for the
// whole header and checks its length before releasing any of it.
func (c *conn) Read(b []byte) (int, error) {
	if !c.adopted.Load() && c.handshakeDone.Load() {
		c.adopt()
	}
	if c.direct && c.handshakeDone.Load() {
		return 0, c.parkReader()
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, c.rerr
	}
	if len(b) == 0 {
		return 0, nil
	}
	if err := c.checkNext(); err != nil {
		return 0, err
	}
	n, rerr := c.br.Read(b)
	if err := c.parse(b[:n]); err != nil {
		return 0, err
	}
	if rerr != nil {
		return n, c.failRead(rerr, false)
	}
	return n, nil
}

// parkReader is zmq4's read once the owner reads messages itself (direct).
// zmq4 reads exact frame lengths, so it never took a byte past the READY:
// everything after it is the owner's (readMessage). On an accepted conn
// zmq4's reader goroutine pumps them until the end; on a dialed one it
// waits for the close.
func (c *conn) parkReader() error {
	if c.ln != nil {
		return c.pumpInbound()
	}
	<-c.closedCh
	return opError("read", c, net.ErrClosed)
}

// checkNext runs the checks due before bytes are released (rmu held): a
// dialed plaintext conn whose peer answers its greeting with a TLS record
// dialed a TLS port; at a frame boundary, the next header's length.
func (c *conn) checkNext() error {
	if c.ln == nil && c.tc == nil && c.rp.state == stateGreeting && c.rp.need == greetingLen {
		if g, err := c.br.Peek(1); err == nil && looksLikeTLSRecord(g[0]) {
			return c.failRead(answeredWithTLS(), true)
		}
	}
	if c.rp.atHeader() {
		return c.checkHeader()
	}
	return nil
}

// parse runs the frame parser over the bytes read (rmu held), watching the
// handshake's commands and an accepted conn's first message.
func (c *conn) parse(b []byte) error {
	for off := 0; off < len(b); {
		k, ev, err := c.rp.next(b[off:])
		off += k
		if err != nil {
			return c.failRead(err, true)
		}
		if ev != eventFrame {
			continue
		}
		if c.rp.command() && !c.handshakeDone.Load() {
			if err := c.onHandshakeCommand(c.rp.body); err != nil {
				return c.failRead(err, true)
			}
		} else if c.silentTimer != nil && !c.spoke.Load() && !c.rp.command() {
			c.spoke.Store(true) // the first message: it is not silent
		}
	}
	return nil
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
	if ev.Identity != "" {
		ev.Key = ConnKey(ev.Identity, c.serial)
	}

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
