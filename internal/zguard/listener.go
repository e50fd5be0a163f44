package zguard

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// acceptBackoff is the pause after a transient Accept error (e.g. EMFILE).
const acceptBackoff = 50 * time.Millisecond

// listener is the net.Listener zmq4 gets. Its own accept loop takes every
// TCP connection, admits it against the pending caps (pendingBook) or
// closes it at once, and runs its pre-handshake in a per-conn goroutine
// under the deadlines: the first byte within FirstByteTimeout, then the
// peer's greeting; our greeting goes out, and the peer's READY is read
// ahead. Only then is the conn handed to zmq4's Accept, whose accept loop
// runs the ZMTP handshake inline: with every byte it reads already
// buffered, no peer can stall it.
//
// A conn stays pending from its accept until its handshake has ended:
// its READY, or with Config.AwaitAuth the owner's Inbound.Authenticated.
//
// Locks: conn.rmu → listener.mu (claim runs inside conn.Read). listener.mu
// is a leaf: it is never held while a conn lock is taken, nor while a conn
// is closed or a callback runs.
type listener struct {
	raw     net.Listener
	cfg     Config
	ready   chan *conn
	done    chan struct{}
	stopCtx func() bool
	wg      sync.WaitGroup // accept loop and greeting goroutines
	once    sync.Once

	mu      sync.Mutex
	closed  bool
	book    *pendingBook
	pending map[*conn]struct{} // admitted by book, handshake not ended
	live    map[string]*conn   // identity → conn that announced it (or was given it)
	nextID  atomic.Uint32      // the last identity generated (identify)
	// released is closed and replaced when a closed conn's identity is
	// let go (release).
	released chan struct{}
	// heldStrangers: the closed conns not authenticated (AwaitAuth) whose
	// identity is held (forget); at most MaxPendingHandshakes.
	heldStrangers map[*conn]struct{}
}

var _ net.Listener = (*listener)(nil)

func listen(ctx context.Context, addr string, cfg Config) (*listener, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{
		raw:   raw,
		cfg:   cfg,
		ready: make(chan *conn),
		done:  make(chan struct{}),
		book: newPendingBook(pendingLimits{max: cfg.MaxPendingHandshakes, perSource: cfg.MaxPendingPerSource,
			reserved: cfg.ReservedForKnown}),
		pending: make(map[*conn]struct{}),
		live:    make(map[string]*conn),

		released:      make(chan struct{}),
		heldStrangers: make(map[*conn]struct{}),
	}
	l.nextID.Store(rand.Uint32())
	if cfg.Inbound != nil {
		cfg.Inbound.add(l)
	}
	l.wg.Add(1)
	go l.acceptLoop()
	l.stopCtx = context.AfterFunc(ctx, func() { _ = l.Close() })
	return l, nil
}

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		raw, err := l.raw.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			t := time.NewTimer(acceptBackoff)
			select {
			case <-t.C:
				continue
			case <-l.done:
				t.Stop()
				return
			}
		}
		l.accepted(raw, time.Now())
	}
}

// accepted admits raw or refuses it, and starts the pre-handshake of an
// admitted conn. A refused conn costs no buffers and no goroutine.
func (l *listener) accepted(raw net.Conn, now time.Time) {
	src := sourceOf(raw.RemoteAddr())
	known, err := l.admit(src)
	if err != nil {
		l.refuse(raw, err)
		return
	}
	var (
		tc *tls.Conn
		fb *firstByteConn
	)
	if l.cfg.TLS != nil {
		fb = &firstByteConn{Conn: raw, deadline: now.Add(l.cfg.HandshakeTimeout)}
		tc = tls.Server(fb, l.cfg.TLS.server)
	}
	c := newConn(raw, tc, false, l.cfg, l, now)
	c.src, c.known, c.fb = src, known, fb
	c.direct = l.cfg.Inbound != nil && (l.cfg.Inbound.msgs != nil || l.cfg.Inbound.fn != nil)
	if !l.track(c) {
		c.closeWith(ErrClosedLocally, false)
		return
	}
	if l.cfg.AwaitAuth {
		c.mu.Lock()
		if !c.closed {
			c.authTimer = time.AfterFunc(time.Until(now.Add(l.cfg.AuthTimeout)), c.authExpired)
		}
		c.mu.Unlock()
	}
	l.wg.Add(1)
	go l.greet(c)
}

// admit takes a pending slot for a conn from src, or says why not.
func (l *listener) admit(src netip.Addr) (known bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosedLocally
	}
	return l.book.admit(src)
}

// track records the admitted conn c as pending; false (and its slot freed)
// when the listener closed meanwhile.
func (l *listener) track(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.book.release(c.src, c.known)
		return false
	}
	l.pending[c] = struct{}{}
	return true
}

// refuse closes a conn that admit refused and reports it.
func (l *listener) refuse(raw net.Conn, reason error) {
	_ = raw.Close()
	ev := ConnEvent{Remote: raw.RemoteAddr().String(), Reason: reason}
	if l.cfg.OnRejected != nil {
		l.cfg.OnRejected(ev)
	}
	if l.cfg.OnConnClosed != nil {
		l.cfg.OnConnClosed(ev)
	}
}

// greet runs c's pre-handshake: the TLS handshake (with TLS), the peer's
// signature, our greeting, the rest of the peer's, and the peer's READY
// read ahead; then it hands c to Accept.
func (l *listener) greet(c *conn) {
	defer l.wg.Done()
	if c.tc != nil {
		// Bounded by the deadlines on the TCP conn (the first byte's, then
		// the handshake's); closing c (listener Close) ends it at once.
		err := handshakeTLS(context.Background(), c.tc, c.tcp, c.firstByte)
		if err != nil {
			if errors.Is(err, ErrHandshakeTimeout) && !c.fb.got.Load() {
				err = ErrNoGreeting
			}
			if errors.Is(err, ErrTLSPlaintext) {
				// Tell a plaintext dialer at once that this port needs TLS.
				_, _ = c.tcp.Write(tlsAlert)
			}
			c.reject(err)
			return
		}
		c.tlsUp.Store(true)
	}
	g, err := c.br.Peek(1)
	if c.tc == nil {
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			c.reject(ErrNoGreeting)
			return
		}
		_ = c.tcp.SetReadDeadline(c.deadline)
	}
	if err == nil && c.tc == nil && looksLikeTLS(g) {
		l.refuseTLS(c)
		return
	}
	// The staged greeting of ZMTP 3 (libzmq): the peer sends its 10-byte
	// signature and waits for ours before it sends its version, and its
	// version before the rest. Ours goes out whole once the peer's
	// signature is valid; the rest of the peer's is checked when it came.
	if err == nil {
		g, err = c.br.Peek(signatureLen)
	}
	if err == nil && !validSignature(g) {
		c.reject(ErrBadGreeting)
		return
	}
	if err == nil {
		if err := c.sendGreeting(); err != nil {
			return // failWrite closed c
		}
		g, err = c.br.Peek(greetingLen)
	}
	switch {
	case err != nil:
		c.rmu.Lock()
		_ = c.failRead(err, false)
		c.rmu.Unlock()
		return
	case !validGreeting(g) || !nullGreeting(g):
		c.reject(ErrBadGreeting)
		return
	}
	ready, err := c.readAheadReady()
	if err != nil {
		c.rmu.Lock()
		_ = c.failRead(err, false)
		c.rmu.Unlock()
		return
	}
	if ready != nil && !l.identifyAhead(c, ready) {
		return
	}
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

// Accept returns the next conn that has sent its greeting.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: Scheme, Addr: l.raw.Addr(), Err: net.ErrClosed}
	}
}

// Close stops accepting, closes every conn still in its handshake and waits
// for the listener's goroutines. Idempotent.
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		l.stopCtx()
		l.mu.Lock()
		l.closed = true
		pending := make([]*conn, 0, len(l.pending))
		for c := range l.pending {
			pending = append(pending, c)
		}
		l.mu.Unlock()
		close(l.done)
		err = l.raw.Close()
		for _, c := range pending {
			c.closeWith(ErrClosedLocally, false)
		}
		l.wg.Wait()
	})
	return err
}

func (l *listener) Addr() net.Addr { return l.raw.Addr() }

// claim makes c the live conn of identity, unless another live conn has it.
func (l *listener) claim(identity string, c *conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.live[identity]; ok && other != c {
		return ErrDuplicateIdentity
	}
	l.live[identity] = c
	return nil
}

// handshakeEnded frees c's pending slot, once, and remembers its source
// as one that completed a handshake.
func (l *listener) handshakeEnded(c *conn) {
	l.mu.Lock()
	if _, ok := l.pending[c]; ok {
		delete(l.pending, c)
		l.book.release(c.src, c.known)
		l.book.learn(c.src)
	}
	l.mu.Unlock()
}

// forget drops every trace of the closed conn c, except one: the identity
// of a conn that delivered messages to its owner (direct reads) stays
// held until the owner lets it go (Inbound.Disconnect), at most
// AuthTimeout (with AwaitAuth, a conn not authenticated only while fewer
// than MaxPendingHandshakes such are held). The owner keys its state by identity: a new connection
// that reused the identity at once would otherwise have its first
// message taken for the old connection's, and the owner's Disconnect of
// the old one would close it. Meanwhile a new connection claiming it is
// refused as a duplicate (ERROR 300: libzmq retries).
func (l *listener) forget(c *conn, identity string) {
	l.mu.Lock()
	if _, ok := l.pending[c]; ok {
		delete(l.pending, c)
		l.book.release(c.src, c.known)
	}
	hold := false
	if identity != "" && l.live[identity] == c {
		hold = c.direct && c.spoke.Load() && !l.closed
		if hold && c.cfg.AwaitAuth && !c.authed.Load() {
			// Not authenticated: held only while few are, so strangers
			// that connect, speak and leave cannot grow the map.
			if hold = len(l.heldStrangers) < c.cfg.MaxPendingHandshakes; hold {
				l.heldStrangers[c] = struct{}{}
			}
		}
		if !hold {
			l.dropLocked(identity)
		}
	}
	l.mu.Unlock()
	if hold {
		time.AfterFunc(l.cfg.AuthTimeout, func() { l.release(identity, c) })
	}
}

// release lets identity go if the closed conn c still holds it (forget),
// and wakes the conns waiting for it (identifyWaiting).
func (l *listener) release(identity string, c *conn) {
	l.mu.Lock()
	if l.live[identity] == c {
		l.dropLocked(identity)
		delete(l.heldStrangers, c)
	}
	l.mu.Unlock()
}

// Inbound closes inbound connections by identity for the owner of a
// listening socket (zmq4's router has no call for it): a peer the owner
// refused, or one that stopped answering, loses its TCP connection instead
// of holding it until it goes away by itself.
type Inbound struct {
	mu sync.Mutex
	ls []*listener

	// msgs, when made (ReadDirect), carries every message read directly
	// from the listeners' connections.
	msgs chan Received
	// fn, when set (ReadDirectFunc), takes them instead.
	fn func(Received)
}

func (in *Inbound) add(l *listener) {
	in.mu.Lock()
	in.ls = append(in.ls, l)
	in.mu.Unlock()
}

// Authenticated tells the listeners that the inbound connection that
// announced identity has authenticated (the owner's own handshake above
// ZMTP succeeded): with Config.AwaitAuth it stops counting as pending
// and its source becomes known (see Config.ReservedForKnown). It reports
// whether such a connection was found. Safe for concurrent use; it does
// not block.
func (in *Inbound) Authenticated(identity string) bool {
	l, c := in.lookup(identity)
	if c == nil {
		return false
	}
	c.authenticate()
	l.handshakeEnded(c)
	return true
}

// lookup finds the live inbound connection that announced identity, and
// its listener.
func (in *Inbound) lookup(identity string) (*listener, *conn) {
	in.mu.Lock()
	ls := in.ls
	in.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		c := l.live[identity]
		l.mu.Unlock()
		if c != nil {
			return l, c
		}
	}
	return nil, nil
}

// Disconnect closes the inbound connection that announced identity, after
// what was written to it (a refusal) has gone out. It reports whether one
// was found.
//
// It also lets the identity go: once a connection that delivered messages
// has closed, its identity stays held until its owner disconnects it (or
// AuthTimeout passes), so a new connection with the same identity is
// never taken for the old one.
func (in *Inbound) Disconnect(identity string) bool {
	l, c := in.lookup(identity)
	if c == nil {
		return false
	}
	c.closeWith(ErrDisconnected, false)
	l.release(identity, c)
	return true
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

// identifyAhead gives c its identity from the READY read ahead, before
// zmq4 sees the connection (identify); it reports whether c goes on. A
// malformed READY is refused as Read would refuse it. A peer whose
// identity a live connection holds is told so with a ZMTP ERROR command
// (errDuplicateReason) before the close: zmq4 has not sent its READY yet,
// so the peer's handshake fails (libzmq reports
// ZMQ_EVENT_HANDSHAKE_FAILED_AUTH with status 300 to its socket monitor).
func (l *listener) identifyAhead(c *conn, ready []byte) bool {
	name, identity, err := sniffCommand(ready)
	if err != nil {
		c.reject(err)
		return false
	}
	if name != "READY" {
		return true // zmq4 refuses it
	}
	if _, err := l.identifyWaiting(c, identity); err != nil {
		if !errors.Is(err, ErrDuplicateIdentity) {
			c.reject(err)
			return false
		}
		c.wmu.Lock()
		if c.werr == nil {
			_, _ = c.writeLocked(errorCommand(errDuplicateReason))
		}
		c.wmu.Unlock()
		c.reject(err)
		return false
	}
	return true
}

// errDuplicateReason is the reason of the ZMTP ERROR command that refuses
// an identity a live connection holds: ZAP's status code for a temporary
// error (RFC 27), which libzmq reports as an authentication failure with
// that status; the identity may be free again later.
const errDuplicateReason = "300"

// errorCommand is a ZMTP ERROR command frame with reason (≤ 255 bytes).
func errorCommand(reason string) []byte {
	body := append([]byte("\x05ERROR"), byte(len(reason)))
	body = append(body, reason...)
	return append([]byte{flagCommand, byte(len(body))}, body...)
}

// identifyWaiting is identify for a conn in its pre-handshake. While
// another conn holds the identity it waits for it to be let go, at most
// half the handshake timeout: a peer that reconnects at once with the same
// identity comes before its old connection's close was read, or before
// the owner let a closed one go (forget). A holder still there then is an
// error matching ErrDuplicateIdentity.
func (l *listener) identifyWaiting(c *conn, announced string) (string, error) {
	t := time.NewTimer(time.Until(c.deadline.Add(-c.cfg.HandshakeTimeout / 2)))
	defer t.Stop()
	for {
		released := l.releasedCh()
		id, err := l.identify(c, announced)
		if err == nil || !errors.Is(err, ErrDuplicateIdentity) {
			return id, err
		}
		select {
		case <-released:
			c.mu.Lock()
			c.identity = "" // not claimed: identify tries again
			c.mu.Unlock()
		case <-t.C:
			return "", err
		case <-c.closedCh:
			return "", ErrClosedLocally
		case <-l.done:
			return "", ErrClosedLocally
		}
	}
}

// releasedCh is closed when an identity is next let go.
func (l *listener) releasedCh() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// dropLocked lets identity go and wakes the conns waiting for it
// (identifyWaiting). l.mu is held.
func (l *listener) dropLocked(identity string) {
	delete(l.live, identity)
	close(l.released)
	l.released = make(chan struct{})
}

// identify returns c's identity and claims it among the live connections:
// the one its READY announced, or for an empty one a generated one (as
// libzmq's ROUTER does: a zero byte and a 32-bit counter starting at a
// random value; a peer cannot choose one that is live, it is refused). A
// conn identified before (identifyAhead) keeps its identity. An identity a
// live connection holds is an error matching ErrDuplicateIdentity.
func (l *listener) identify(c *conn, announced string) (string, error) {
	c.mu.Lock()
	id := c.identity
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	if announced != "" {
		err := l.claim(announced, c)
		c.mu.Lock()
		c.identity = announced // kept for ConnEvent even when refused
		c.mu.Unlock()
		if err != nil {
			return "", fmt.Errorf("%w: %.64q", err, announced)
		}
		return announced, nil
	}
	for {
		var g [5]byte
		binary.BigEndian.PutUint32(g[1:], l.nextID.Add(1))
		if l.claim(string(g[:]), c) == nil {
			c.mu.Lock()
			c.identity = string(g[:])
			c.mu.Unlock()
			return string(g[:]), nil
		}
	}
}
