package zguard

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
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
	live    map[string]*conn   // identity → conn that announced it
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
	}
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
// greeting, ours, and the peer's READY read ahead; then it hands c to
// Accept.
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
	if err == nil {
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
	if err := c.sendGreeting(); err != nil {
		return // failWrite closed c
	}
	if err := c.readAheadReady(); err != nil {
		c.rmu.Lock()
		_ = c.failRead(err, false)
		c.rmu.Unlock()
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

// forget drops every trace of the closed conn c.
func (l *listener) forget(c *conn, identity string) {
	l.mu.Lock()
	if _, ok := l.pending[c]; ok {
		delete(l.pending, c)
		l.book.release(c.src, c.known)
	}
	if identity != "" && l.live[identity] == c {
		delete(l.live, identity)
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
func (in *Inbound) Disconnect(identity string) bool {
	_, c := in.lookup(identity)
	if c == nil {
		return false
	}
	c.closeWith(ErrDisconnected, false)
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
// same bytes (swallowed). The peer sends its READY only after our greeting.
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
// every byte it reads already there. A first frame that is no command, or
// is larger than the limit or the buffer, is left to the frame checks of
// Read.
func (c *conn) readAheadReady() error {
	h, err := c.br.Peek(greetingLen + 1)
	if err != nil {
		return err
	}
	flags := h[greetingLen]
	hl := headerLen(flags)
	if h, err = c.br.Peek(greetingLen + hl); err != nil {
		return err
	}
	if flags&flagCommand == 0 {
		return nil
	}
	size := uint64(h[greetingLen+1])
	if hl == maxHeaderLen {
		size = binary.BigEndian.Uint64(h[greetingLen+1:])
	}
	if size > handshakeCmdLimit || uint64(greetingLen+hl)+size > uint64(c.br.Size()) {
		return nil
	}
	_, err = c.br.Peek(greetingLen + hl + int(size))
	return err
}
