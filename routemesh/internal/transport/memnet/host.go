package memnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zlink-go/zlink/routemesh/internal/transport"
)

var (
	// ErrRefused: nothing listens on the dialed endpoint.
	ErrRefused = errors.New("memnet: connection refused")
	// ErrUnreachable: the two hosts are cut apart.
	ErrUnreachable = errors.New("memnet: host unreachable")
	// ErrInUse: the endpoint is bound already.
	ErrInUse = errors.New("memnet: address already in use")
	// ErrDuplicateIdentity: a live connection already has the identity.
	ErrDuplicateIdentity = errors.New("memnet: identity already connected")

	errReset = fmt.Errorf("memnet: connection reset: %w", io.EOF)
)

// Host is one host's transport on a Network.
type Host struct {
	net  *Network
	name string
}

var (
	_ transport.Transport = (*Host)(nil)
	_ transport.Listener  = (*listener)(nil)
	_ transport.Conn      = (*conn)(nil)
)

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// parse splits tcp://host:port.
func parse(endpoint string) (string, int, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", 0, fmt.Errorf("%w: %q", transport.ErrBadEndpoint, endpoint)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q: %v", transport.ErrBadEndpoint, endpoint, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("%w: %q: bad port", transport.ErrBadEndpoint, endpoint)
	}
	return host, p, nil
}

// Listen binds endpoint on this host; port 0 picks a free one.
func (h *Host) Listen(endpoint string, ev transport.Events) (transport.Listener, error) {
	host, port, err := parse(endpoint)
	if err != nil {
		return nil, err
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == 0 {
		for n.listeners[net.JoinHostPort(host, strconv.Itoa(n.nextPort))] != nil {
			n.nextPort++
		}
		port = n.nextPort
		n.nextPort++
	}
	key := net.JoinHostPort(host, strconv.Itoa(port))
	if n.listeners[key] != nil {
		return nil, fmt.Errorf("%w: %s", ErrInUse, key)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ip = net.IPv4(127, 0, 0, 1)
	}
	l := &listener{net: n, host: h.name, key: key, addr: &net.TCPAddr{IP: ip, Port: port},
		in: newInbox(), ev: ev, conns: map[string]*conn{}}
	n.listeners[key] = l
	return l, nil
}

// Dial connects a pipe with identity to the listener at endpoint. It fails
// at once when nothing listens there, the hosts are cut apart, or the
// identity is connected already.
func (h *Host) Dial(ctx context.Context, endpoint, identity string) (transport.Conn, error) {
	host, port, err := parse(endpoint)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := h.net
	n.mu.Lock()
	l := n.listeners[net.JoinHostPort(host, strconv.Itoa(port))]
	switch {
	case l == nil:
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrRefused, endpoint)
	case n.cut(h.name, l.host):
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: %s → %s", ErrUnreachable, h.name, l.host)
	}
	c := &conn{net: n, host: h.name, id: identity, idb: []byte(identity), l: l, in: newInbox()}
	err = l.attach(c)
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// listener is a bound endpoint.
type listener struct {
	net  *Network
	host string
	key  string
	addr *net.TCPAddr
	in   *inbox
	ev   transport.Events

	mu     sync.Mutex
	conns  map[string]*conn // by identity
	closed bool
}

func (l *listener) attach(c *conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return fmt.Errorf("%w: %s", ErrRefused, l.key)
	case l.conns[c.id] != nil:
		return fmt.Errorf("%w: %q", ErrDuplicateIdentity, c.id)
	}
	l.conns[c.id] = c
	return nil
}

// detach forgets c and reports it closed (once).
func (l *listener) detach(c *conn, reason error) {
	l.mu.Lock()
	ok := l.conns[c.id] == c
	if ok {
		delete(l.conns, c.id)
	}
	l.mu.Unlock()
	if ok && l.ev.OnClosed != nil {
		l.ev.OnClosed(c.id, reason)
	}
}

func (l *listener) connsFrom(host string) []*conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*conn
	for _, c := range l.conns {
		if c.host == host {
			out = append(out, c)
		}
	}
	return out
}

func (l *listener) Addr() net.Addr { return l.addr }

func (l *listener) Recv() (string, []byte, error) {
	it, err := l.in.pop()
	if err != nil {
		return "", nil, err
	}
	return string(it.id), it.frame, nil
}

func (l *listener) Send(identity, frame []byte) error {
	l.mu.Lock()
	c := l.conns[string(identity)]
	l.mu.Unlock()
	if c == nil {
		return nil // unknown or closed identity: dropped silently
	}
	l.net.route(l.host, c.host, c.in, item{frame: append([]byte(nil), frame...)})
	return nil
}

// Disconnect does nothing: memnet does not model a TCP close of one
// connection. The dialer learns the end from the frames sent before (a
// Reject) or by its own liveness, as it did before connections could be
// closed.
func (l *listener) Disconnect(string) {}

// Authenticated does nothing: memnet keeps no caps on connections in
// their handshake.
func (l *listener) Authenticated(string) {}

// Close unbinds the endpoint; every connection to it is reset.
func (l *listener) Close() error {
	l.net.mu.Lock()
	if l.net.listeners[l.key] == l {
		delete(l.net.listeners, l.key)
	}
	l.net.mu.Unlock()
	l.mu.Lock()
	l.closed = true
	cs := make([]*conn, 0, len(l.conns))
	for _, c := range l.conns {
		cs = append(cs, c)
	}
	l.mu.Unlock()
	l.in.close(fmt.Errorf("%w: listener %s", transport.ErrClosed, l.key))
	for _, c := range cs {
		c.sever(errReset)
	}
	return nil
}

// conn is the dialer's end of one pipe.
type conn struct {
	net  *Network
	host string
	id   string
	idb  []byte
	l    *listener
	in   *inbox
	shut atomic.Bool // closed by its owner
}

func (c *conn) Send(frame []byte) error {
	select {
	case <-c.in.closed:
		return fmt.Errorf("%w: %s", transport.ErrClosed, c.id)
	default:
	}
	c.net.route(c.host, c.l.host, c.l.in, item{id: append([]byte(nil), c.idb...), frame: append([]byte(nil), frame...)})
	return nil
}

func (c *conn) Recv() ([]byte, error) {
	it, err := c.in.pop()
	if err != nil {
		if c.shut.Load() && !errors.Is(err, transport.ErrClosed) {
			return nil, fmt.Errorf("%w: %s: %w", transport.ErrClosed, c.id, err)
		}
		return nil, err
	}
	return it.frame, nil
}

// Close closes the dialer's end; the listener reports it closed.
func (c *conn) Close() error {
	c.shut.Store(true)
	if c.in.close(fmt.Errorf("%w: %s", transport.ErrClosed, c.id)) {
		c.l.detach(c, io.EOF)
	}
	return nil
}

// sever ends the connection from the network's side (reset, listener
// closed): Recv returns reason, the listener reports it closed.
func (c *conn) sever(reason error) {
	c.in.close(reason)
	c.l.detach(c, reason)
}
