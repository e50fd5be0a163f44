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
	// still in their handshake (until the READY, or with AwaitAuth until
	// the owner's Inbound.Authenticated); past it new connections are
	// closed at accept (ErrTooManyPending). Default 64.
	MaxPendingHandshakes int
	// MaxPendingPerSource bounds the pending connections of one source (an
	// IPv4 address, or an IPv6 /64); past it that source's new
	// connections are closed at accept (ErrTooManyFromSource), so one
	// stranger cannot take every slot. Default 16; more than
	// MaxPendingHandshakes is lowered to it.
	MaxPendingPerSource int
	// ReservedForKnown is how many of MaxPendingHandshakes only sources
	// that completed a handshake on this listener before may take: a
	// flood of strangers from many addresses leaves them free for known
	// peers that reconnect. Default (0) MaxPendingHandshakes/4; negative
	// reserves none; it must be less than MaxPendingHandshakes.
	ReservedForKnown int
	// FirstByteTimeout closes an accepted connection that sends nothing at
	// all within it of its accept (ErrNoGreeting): a peer sends its
	// greeting (or TLS ClientHello) as soon as it connects. Default 1s;
	// more than HandshakeTimeout is lowered to it.
	FirstByteTimeout time.Duration
	// AwaitAuth keeps each accepted connection pending (counted by the
	// caps above) until the socket's owner reports its application
	// handshake authenticated (Inbound.Authenticated), not only until its
	// ZMTP READY: a stranger that speaks ZMTP but cannot authenticate
	// holds a pending slot, not a free connection. Requires Inbound.
	AwaitAuth bool
	// AuthTimeout, with AwaitAuth, closes an accepted connection that is
	// not authenticated within it of its accept (ErrNotAuthenticated). It
	// also bounds how long a closed connection that delivered messages to
	// the owner (Inbound.ReadDirect) holds its identity when the owner
	// does not let it go (Inbound.Disconnect).
	// Default (0) 3×HandshakeTimeout: the ZMTP handshake, the silence
	// before the first message (SpeakFirst) and the owner's own
	// handshake, each bounded by HandshakeTimeout.
	AuthTimeout time.Duration
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
	// through it their owner sends to, authenticates and closes one inbound
	// connection by its key (ConnKey).
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
	Key      string // the connection's key (ConnKey); "" without an identity
	Remote   string // peer address host:port
	Reason   error  // why; ErrClosedLocally, io.EOF, or a guard error
}

// DefaultConfig returns the defaults documented on Config. The fields
// derived from others (ReservedForKnown, AuthTimeout) are left zero: they
// follow the fields they derive from.
func DefaultConfig() Config {
	return Config{
		HandshakeTimeout:     2 * time.Second,
		WriteTimeout:         5 * time.Second,
		MaxFrame:             64 << 20,
		ReadBufferSize:       64 << 10,
		WriteBufferSize:      64 << 10,
		MaxPendingHandshakes: 64,
		MaxPendingPerSource:  16,
		FirstByteTimeout:     time.Second,
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
	if c.MaxPendingPerSource == 0 {
		c.MaxPendingPerSource = d.MaxPendingPerSource
	}
	c.MaxPendingPerSource = min(c.MaxPendingPerSource, c.MaxPendingHandshakes)
	switch {
	case c.ReservedForKnown == 0:
		c.ReservedForKnown = c.MaxPendingHandshakes / 4
	case c.ReservedForKnown < 0:
		c.ReservedForKnown = 0
	}
	if c.FirstByteTimeout == 0 {
		c.FirstByteTimeout = d.FirstByteTimeout
	}
	c.FirstByteTimeout = min(c.FirstByteTimeout, c.HandshakeTimeout)
	if c.AuthTimeout == 0 {
		c.AuthTimeout = 3 * c.HandshakeTimeout
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
	case c.MaxPendingPerSource < 0:
		return fmt.Errorf("%w: MaxPendingPerSource %d", ErrInvalidConfig, c.MaxPendingPerSource)
	case c.ReservedForKnown >= c.MaxPendingHandshakes:
		return fmt.Errorf("%w: ReservedForKnown %d (less than MaxPendingHandshakes %d)", ErrInvalidConfig,
			c.ReservedForKnown, c.MaxPendingHandshakes)
	case c.FirstByteTimeout < 0:
		return fmt.Errorf("%w: FirstByteTimeout %v", ErrInvalidConfig, c.FirstByteTimeout)
	case c.AuthTimeout < 0:
		return fmt.Errorf("%w: AuthTimeout %v", ErrInvalidConfig, c.AuthTimeout)
	case c.AwaitAuth && c.Inbound == nil:
		return fmt.Errorf("%w: AwaitAuth without an Inbound to report authentications", ErrInvalidConfig)
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
