package zguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// DialDealer dials endpoint (zgtcp:// or tcp://) and runs the ZMTP
// handshake of a DEALER with identity over the guarded connection, through
// zmq4 (zmq4.Open: greeting and READY), then hands the connection to out:
// the caller sends and reads on it directly (Outbound.Send, Outbound.Recv)
// and closes it with Outbound.Close.
//
// Unlike a zmq4 DEALER socket that dials, it starts no goroutine: a DEALER
// keeps a reaper goroutine per socket and a reader goroutine per
// connection, both idle for a connection read directly (two goroutines of
// every outbound pipe, measured; docs/architecture.md, "Transport").
// dialTimeout bounds the TCP connect; cfg.HandshakeTimeout bounds the
// connect, TLS and the ZMTP handshake together. ctx ends the dial early.
func DialDealer(ctx context.Context, cfg Config, endpoint, identity string, dialTimeout time.Duration, out *Outbound) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	addr, err := dialAddr(endpoint)
	if err != nil {
		return err
	}
	start := time.Now()
	dctx, cancel := context.WithDeadline(ctx, start.Add(cfg.HandshakeTimeout))
	defer cancel()
	d := net.Dialer{Timeout: dialTimeout}
	raw, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("zguard: could not dial %q: %w", endpoint, err)
	}
	var c *conn
	if cfg.TLS == nil {
		c = newConn(raw, nil, false, cfg, nil, start)
	} else {
		tc := tls.Client(raw, cfg.TLS.client)
		if err := handshakeTLS(dctx, tc, raw, start.Add(cfg.HandshakeTimeout)); err != nil {
			_ = raw.Close()
			return &net.OpError{Op: "dial", Net: Scheme, Addr: raw.RemoteAddr(), Err: err}
		}
		c = newConn(raw, tc, true, cfg, nil, start)
	}
	c.direct = true
	// Nobody reads c while zmq4 runs the handshake: a ctx cancelled
	// meanwhile ends it by closing c.
	stop := context.AfterFunc(ctx, func() { c.closeWith(ctx.Err(), false) })
	defer stop()
	if _, err := zmq4.Open(c, null.Security(), zmq4.Dealer, zmq4.SocketIdentity(identity), false, nil); err != nil {
		c.closeWith(fmt.Errorf("%w: %w", ErrClosedLocally, err), false)
		return fmt.Errorf("zguard: ZMTP handshake with %q: %w", endpoint, err)
	}
	if !c.handshakeDone.Load() {
		// zmq4 returned without our parser seeing the peer's READY.
		c.reject(ErrHandshakeTimeout)
		return fmt.Errorf("zguard: ZMTP handshake with %q: %w", endpoint, ErrHandshakeTimeout)
	}
	c.adopt() // its reader is the caller, not zmq4's goroutine
	out.set(c)
	return nil
}

// dialAddr returns the host:port of a zgtcp:// or tcp:// endpoint.
func dialAddr(endpoint string) (string, error) {
	ep, err := Endpoint(endpoint)
	if err != nil {
		return "", err
	}
	return ep[len(guardPrefix):], nil
}

// Close closes the dialed connection (DialDealer); later sends and reads
// fail. Idempotent.
func (o *Outbound) Close() error {
	o.mu.Lock()
	c := o.c
	o.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}
