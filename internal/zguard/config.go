package zguard

import (
	"context"
	"fmt"
	"time"
)

// Config guards the connections of one zmq4 socket. A zero field takes its
// default.
type Config struct {
	// HandshakeTimeout bounds the TCP connect (dialed conns) and the ZMTP
	// greeting+READY exchange of every accepted and dialed connection,
	// measured from accept/dial. Default 2s.
	HandshakeTimeout time.Duration
	// WriteTimeout is the deadline of every write to the kernel (at most 1 MiB
	// at a time): a peer that accepts nothing for this long fails its own
	// connection instead of blocking the socket. Default 5s.
	WriteTimeout time.Duration
	// MaxFrame is the receive limit in bytes: a frame header announcing more
	// closes the connection before zmq4 allocates. Default 64 MiB.
	MaxFrame uint64
	// ReadBufferSize and WriteBufferSize in bytes; default 64 KiB each.
	// ReadBufferSize must be at least 64 (one ZMTP greeting).
	ReadBufferSize, WriteBufferSize int
	// MaxPendingHandshakes bounds the accepted connections of one listener
	// still in their handshake; past it new connections are closed
	// (ErrTooManyPending). Default 64.
	MaxPendingHandshakes int
	// OnConnClosed, optional, is called exactly once per connection that
	// closed, whatever side closed it and why. It runs on the goroutine that
	// noticed the close and must not block.
	OnConnClosed func(ev ConnEvent)
	// OnRejected, optional, is called when a guard refuses a connection
	// (oversized frame, handshake timeout, duplicate identity, too many
	// pending, bad greeting or READY), before OnConnClosed. Must not block.
	OnRejected func(ev ConnEvent)
	// SpeakFirst refuses (ErrSilent) an accepted connection that sends no
	// message within HandshakeTimeout of its READY: for sockets whose
	// peers always speak first (a router whose dialers open with a Hello).
	SpeakFirst bool
	// Inbound, optional, is filled by the listeners made with this Config:
	// through it their owner closes one inbound connection by identity.
	Inbound *Inbound
	// Outbound, optional, is filled by the dials made with this Config:
	// through it their owner sends on the dialed connection directly.
	Outbound *Outbound
	// TLS, when set, runs every connection over TLS 1.3 with mutual
	// authentication (NewTLS); a peer that fails it is refused with a
	// *TLSError (matching ErrTLS) before zmq4 sees the connection. nil =
	// plaintext: a TLS ClientHello is then refused with ErrTLSUnexpected.
	TLS *TLS
}

// ConnEvent describes a closed or rejected connection.
type ConnEvent struct {
	Identity string // peer socket identity from its READY; "" if not seen
	Remote   string // peer address host:port
	Reason   error  // why; ErrClosedLocally, io.EOF, or a guard error
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		HandshakeTimeout:     2 * time.Second,
		WriteTimeout:         5 * time.Second,
		MaxFrame:             64 << 20,
		ReadBufferSize:       64 << 10,
		WriteBufferSize:      64 << 10,
		MaxPendingHandshakes: 64,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = d.HandshakeTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = d.MaxFrame
	}
	if c.ReadBufferSize == 0 {
		c.ReadBufferSize = d.ReadBufferSize
	}
	if c.WriteBufferSize == 0 {
		c.WriteBufferSize = d.WriteBufferSize
	}
	if c.MaxPendingHandshakes == 0 {
		c.MaxPendingHandshakes = d.MaxPendingHandshakes
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.HandshakeTimeout < 0:
		return fmt.Errorf("%w: HandshakeTimeout %v", ErrInvalidConfig, c.HandshakeTimeout)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v", ErrInvalidConfig, c.WriteTimeout)
	case c.ReadBufferSize < greetingLen:
		return fmt.Errorf("%w: ReadBufferSize %d < %d", ErrInvalidConfig, c.ReadBufferSize, greetingLen)
	case c.WriteBufferSize < 0:
		return fmt.Errorf("%w: WriteBufferSize %d", ErrInvalidConfig, c.WriteBufferSize)
	case c.MaxPendingHandshakes < 0:
		return fmt.Errorf("%w: MaxPendingHandshakes %d", ErrInvalidConfig, c.MaxPendingHandshakes)
	}
	return nil
}

type configKey struct{}

// WithConfig returns a context carrying cfg. Give it to zmq4.NewRouter,
// NewDealer, …: the socket's zgtcp listeners and dials then use cfg.
func WithConfig(ctx context.Context, cfg Config) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

// configFrom returns the validated Config carried by ctx, or the defaults.
func configFrom(ctx context.Context) (Config, error) {
	cfg, ok := ctx.Value(configKey{}).(Config)
	if !ok {
		cfg = DefaultConfig()
	}
	cfg = cfg.withDefaults()
	return cfg, cfg.validate()
}
