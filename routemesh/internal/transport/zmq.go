package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/zguard"
)

// ZMQConfig configures the guarded zmq4 transport of one node.
type ZMQConfig struct {
	// Guard guards every connection of the node's sockets (greeting
	// deadline, write deadlines, frame limit). OnConnClosed is set by
	// Listen from Events; leave it nil.
	Guard zguard.Config
	// ListenerID is the ROUTER's own socket identity.
	ListenerID string
	// DialTimeout bounds one dial (TCP connect); zmq4's retries are off, so
	// the caller redials.
	DialTimeout time.Duration
	// OnTLSRefused, optional, is called for every connection refused at the
	// TLS layer (an error matching zguard.ErrTLS): inbound ones the
	// listener refused, and failed dials. It runs on a transport goroutine
	// (inbound) or the dialing one and must not block. Guard.TLS turns TLS
	// on; a plaintext transport reports TLS peers that knock
	// (zguard.ErrTLSUnexpected).
	OnTLSRefused func(TLSRefusal)
}

// TLSRefusal is one connection refused at the TLS layer.
type TLSRefusal struct {
	// Inbound is true for a connection the listener accepted and refused,
	// false for a dial that failed.
	Inbound bool
	// Peer is the dialed endpoint (outbound) or the peer's host:port
	// (inbound).
	Peer string
	// Err matches zguard.ErrTLS and one of its kinds.
	Err error
}

// ZMQ is the production transport: one zmq4 ROUTER bound through the
// zgtcp:// guard, and per outbound pipe one guarded connection that zmq4
// opened as a DEALER. ctx is the parent
// of every socket it makes: cancelling it ends them.
type ZMQ struct {
	ctx context.Context
	cfg ZMQConfig
}

var (
	_ Transport = (*ZMQ)(nil)
	_ Listener  = (*zmqListener)(nil)
	_ Conn      = (*zmqConn)(nil)
)

// NewZMQ returns the guarded zmq4 transport (and registers the guard with
// zmq4 once per process).
func NewZMQ(ctx context.Context, cfg ZMQConfig) *ZMQ {
	zguard.Register()
	return &ZMQ{ctx: ctx, cfg: cfg}
}

// Listen binds a ROUTER on endpoint.
func (t *ZMQ) Listen(endpoint string, ev Events) (Listener, error) {
	ep, err := zguard.Endpoint(endpoint)
	if err != nil {
		return nil, err
	}
	g := t.cfg.Guard
	// A router's dialers always speak first (a Hello): one that says
	// nothing after its READY is refused, and the owner can close one.
	g.SpeakFirst, g.Inbound = true, &zguard.Inbound{}
	// Each connection counts as pending until the node's handshake has
	// authenticated it (zmqListener.Authenticated).
	g.AwaitAuth = true
	if on := ev.OnFrame; on != nil {
		g.Inbound.ReadDirectFunc(func(m zguard.Received) {
			if m.Err != nil {
				on(m.Key, nil, fmt.Errorf("%w: %w", ErrMalformed, m.Err))
				return
			}
			on(m.Key, m.Frame, nil)
		})
	} else {
		g.Inbound.ReadDirect(inboundQueue)
	}
	if on := ev.OnClosed; on != nil {
		g.OnConnClosed = func(ce zguard.ConnEvent) {
			// A connection refused for claiming a live identity is not the
			// live pipe closing; one closed before its READY has no pipe.
			if ce.Key != "" && !errors.Is(ce.Reason, zguard.ErrDuplicateIdentity) {
				on(ce.Key, ce.Reason)
			}
		}
	}
	if on := ev.OnRefused; on != nil {
		prev := g.OnRejected
		g.OnRejected = func(ce zguard.ConnEvent) {
			if prev != nil {
				prev(ce)
			}
			on(ce.Remote, ce.Reason)
		}
	}
	if on := t.cfg.OnTLSRefused; on != nil {
		prev := g.OnRejected
		g.OnRejected = func(ce zguard.ConnEvent) {
			if prev != nil {
				prev(ce)
			}
			if errors.Is(ce.Reason, zguard.ErrTLS) {
				on(TLSRefusal{Inbound: true, Peer: ce.Remote, Err: ce.Reason})
			}
		}
	}
	r := zmq4.NewRouter(zguard.WithConfig(t.ctx, g), zmq4.WithID(zmq4.SocketIdentity(t.cfg.ListenerID)))
	if err := r.Listen(ep); err != nil {
		_ = r.Close()
		return nil, err
	}
	return &zmqListener{s: r, inbound: g.Inbound, done: make(chan struct{})}, nil
}

// Dial connects an outbound pipe with identity to endpoint: the ZMTP
// handshake of a DEALER, run by zmq4 (zguard.DialDealer), on a guarded
// connection the pipe then reads and writes itself. No zmq4 socket is
// kept: it would hold two goroutines per pipe that never run.
func (t *ZMQ) Dial(ctx context.Context, endpoint, identity string) (Conn, error) {
	if _, err := zguard.Endpoint(endpoint); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &zguard.Outbound{}
	if err := zguard.DialDealer(t.ctx, t.cfg.Guard, endpoint, identity, t.cfg.DialTimeout, out); err != nil {
		if on := t.cfg.OnTLSRefused; on != nil && errors.Is(err, zguard.ErrTLS) {
			on(TLSRefusal{Peer: endpoint, Err: err})
		}
		return nil, err
	}
	return &zmqConn{out: out}, nil
}

// inboundQueue is how many messages read from inbound connections wait for
// the listener's reader (as many as zmq4's own ROUTER queue and then some);
// past it each connection's reads wait.
const inboundQueue = 16

// zmqListener names each inbound connection by its zguard key (the
// dialer's identity, '#', the connection's number): a connection that
// closed is never taken for a new one with the same identity.
type zmqListener struct {
	s       zmq4.Socket
	inbound *zguard.Inbound
	done    chan struct{} // closed by Close: Recv returns ErrClosed
	once    sync.Once
}

func (l *zmqListener) Disconnect(key string) { l.inbound.Disconnect(key) }

func (l *zmqListener) Authenticated(key string) { l.inbound.Authenticated(key) }

func (l *zmqListener) Addr() net.Addr { return l.s.Addr() }

// Recv takes the next message the inbound connections' readers read
// directly (zguard.Inbound.ReadDirect), not zmq4's ROUTER queue. With
// Events.OnFrame it only waits for Close.
func (l *zmqListener) Recv() (string, []byte, error) {
	select {
	case m := <-l.inbound.Messages():
		if m.Err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrMalformed, m.Err)
		}
		return m.Key, m.Frame, nil
	case <-l.done:
		return "", nil, fmt.Errorf("%w: listener closed", ErrClosed)
	}
}

// TrySend writes msg without blocking (zguard.Inbound.TrySend).
func (l *zmqListener) TrySend(key, msg []byte) (bool, error) {
	return l.inbound.TrySend(key, msg)
}

// Send writes to key's connection directly (zguard.Inbound.Send), not
// through the ROUTER: a peer that stops reading holds up only the writes
// to it, and no goroutine is started per send. A key with no live
// connection is dropped silently, as the interface says (its pipe learns
// of the close from Events.OnClosed).
func (l *zmqListener) Send(key, frame []byte) error {
	err := l.inbound.Send(key, frame)
	if errors.Is(err, zguard.ErrNotConnected) {
		return nil
	}
	return err
}

func (l *zmqListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.s.Close()
}

type zmqConn struct {
	out    *zguard.Outbound
	closed atomic.Bool
}

// Send writes to the dialed connection directly (zguard.Outbound.Send).
func (c *zmqConn) Send(frame []byte) error { return c.out.Send(frame) }

// TrySend writes msg without blocking (zguard.Outbound.TrySend).
func (c *zmqConn) TrySend(msg []byte) (bool, error) { return c.out.TrySend(msg) }

// Recv reads the dialed connection directly (zguard.Outbound.Recv) on the
// pipe's reader goroutine.
func (c *zmqConn) Recv() ([]byte, error) {
	frame, err := c.out.Recv()
	if err != nil {
		if c.closed.Load() {
			return nil, fmt.Errorf("%w: %w", ErrClosed, err)
		}
		if errors.Is(err, zguard.ErrMultipart) {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		return nil, err
	}
	return frame, nil
}

func (c *zmqConn) Close() error {
	c.closed.Store(true)
	return c.out.Close()
}
