package zguard

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"
)

// acceptBackoff is the pause after a transient Accept error (e.g. EMFILE).
const acceptBackoff = 50 * time.Millisecond

// listener is the net.Listener zmq4 gets. Its own accept loop takes every
// TCP connection, reads the peer's greeting in a per-conn goroutine under
// the handshake deadline, and only then hands the conn to zmq4's Accept.
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
	pending map[*conn]struct{} // accepted, READY not yet read
	live    map[string]*conn   // identity → conn that announced it
}

var _ net.Listener = (*listener)(nil)

func listen(ctx context.Context, addr string, cfg Config) (*listener, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{
		raw:     raw,
		cfg:     cfg,
		ready:   make(chan *conn),
		done:    make(chan struct{}),
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
		var tc *tls.Conn
		if l.cfg.TLS != nil {
			tc = tls.Server(raw, l.cfg.TLS.server)
		}
		c := newConn(raw, tc, false, l.cfg, l, time.Now())
		c.direct = l.cfg.Inbound != nil && l.cfg.Inbound.msgs != nil
		if err := l.admit(c); err != nil {
			c.reject(err)
			continue
		}
		l.wg.Add(1)
		go l.greet(c)
	}
}

// admit counts c as pending, or says why not.
func (l *listener) admit(c *conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosedLocally
	case len(l.pending) >= l.cfg.MaxPendingHandshakes:
		return ErrTooManyPending
	}
	l.pending[c] = struct{}{}
	return nil
}

// greet runs c's TLS handshake (with TLS), waits for its greeting, keeping
// it buffered for zmq4, then hands c to Accept.
func (l *listener) greet(c *conn) {
	defer l.wg.Done()
	if c.tc != nil {
		// Bounded by the handshake deadline on the TCP conn; closing c
		// (listener Close) ends it at once.
		err := handshakeTLS(context.Background(), c.tc, c.tcp, c.deadline)
		if err != nil {
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
	case !validGreeting(g):
		c.reject(ErrBadGreeting)
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

// handshakeEnded frees c's pending slot.
func (l *listener) handshakeEnded(c *conn) {
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
}

// forget drops every trace of the closed conn c.
func (l *listener) forget(c *conn, identity string) {
	l.mu.Lock()
	delete(l.pending, c)
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
}

func (in *Inbound) add(l *listener) {
	in.mu.Lock()
	in.ls = append(in.ls, l)
	in.mu.Unlock()
}

// Disconnect closes the inbound connection that announced identity, after
// what was written to it (a refusal) has gone out. It reports whether one
// was found.
func (in *Inbound) Disconnect(identity string) bool {
	in.mu.Lock()
	ls := in.ls
	in.mu.Unlock()
	for _, l := range ls {
		l.mu.Lock()
		c := l.live[identity]
		l.mu.Unlock()
		if c != nil {
			c.closeWith(ErrDisconnected, false)
			return true
		}
	}
	return false
}
