package zguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

var registerOnce sync.Once

// Register registers the zgtcp transport with zmq4. It is idempotent and
// safe for concurrent use; it panics if another transport already took the
// name Scheme.
func Register() {
	registerOnce.Do(func() {
		if err := zmq4.RegisterTransport(Scheme, guardTransport{tcp: transport.New("tcp")}); err != nil {
			panic(fmt.Sprintf("zguard: %v", err))
		}
	})
}

// guardTransport is the zmq4 transport. ctx is the socket's context and
// carries the Config (WithConfig).
type guardTransport struct {
	tcp transport.Transport
}

var _ transport.Transport = guardTransport{}

func (t guardTransport) Dial(ctx context.Context, dialer transport.Dialer, addr string) (net.Conn, error) {
	cfg, err := configFrom(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	dctx, cancel := context.WithDeadline(ctx, start.Add(cfg.HandshakeTimeout))
	defer cancel()
	raw, err := dialer.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg.TLS == nil {
		return cfg.dialed(newConn(raw, nil, false, cfg, nil, start)), nil
	}
	tc := tls.Client(raw, cfg.TLS.client)
	if err := handshakeTLS(dctx, tc, raw, start.Add(cfg.HandshakeTimeout)); err != nil {
		_ = raw.Close()
		return nil, &net.OpError{Op: "dial", Net: Scheme, Addr: raw.RemoteAddr(), Err: err}
	}
	return cfg.dialed(newConn(raw, tc, true, cfg, nil, start)), nil
}

func (t guardTransport) Listen(ctx context.Context, addr string) (net.Listener, error) {
	cfg, err := configFrom(ctx)
	if err != nil {
		return nil, err
	}
	return listen(ctx, addr, cfg)
}

func (t guardTransport) Addr(ep string) (string, error) { return t.tcp.Addr(ep) }

// dialed records c in the Config's Outbound, if any (its owner then
// sends and reads on c directly), and returns it.
func (cfg Config) dialed(c *conn) *conn {
	if cfg.Outbound != nil {
		c.direct = true
		cfg.Outbound.set(c)
	}
	return c
}
