package zguard

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
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
