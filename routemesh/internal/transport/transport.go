package transport

import (
	"context"
	"net"

	"github.com/zlink-go/zlink/internal/zguard"
)

// Transport creates a node's listener and its outbound pipes. It must be
// safe for concurrent use: the node listens once at start and dials from
// several goroutines.
type Transport interface {
	// Listen binds endpoint ("tcp://host:port"; port 0 picks a free one).
	// ev.OnClosed is reported for every inbound connection that closes
	// after its peer's identity was known. A malformed endpoint is an
	// error wrapping ErrBadEndpoint. Listen does not block beyond the bind.
	Listen(endpoint string, ev Events) (Listener, error)
	// Dial connects one outbound pipe with the given identity to endpoint.
	// It blocks until the connection is up or the transport's dial timeout
	// passes; a ctx that is already done is refused. A malformed endpoint
	// is an error wrapping ErrBadEndpoint.
	Dial(ctx context.Context, endpoint, identity string) (Conn, error)
}

// Events are the listener's notifications.
type Events struct {
	// OnClosed, optional, is called once for each inbound connection with a
	// known identity that closed (whichever side closed it). It runs on a
	// transport goroutine and must not block. A connection refused because
	// its identity is already connected is not reported: it is not the
	// live pipe closing.
	OnClosed func(identity string, reason error)
	// OnRefused, optional, is called once for each inbound connection the
	// listener's guards refused (caps on connections in their handshake,
	// handshake deadlines, malformed handshakes, TLS), with the peer's
	// host:port. It runs on a transport goroutine and must not block.
	OnRefused func(remote string, reason error)
	// OnFrame, optional, lets the listener hand each inbound frame (as
	// Recv would return it, ErrMalformed included) to this function on
	// the goroutine that read it — one per connection, a connection's
	// frames in order — instead of queueing it for Recv: one goroutine
	// hand-off less per frame. A listener may ignore it (memnet does), so
	// the caller still reads Recv. It must not block for long: it holds
	// up its connection's reads.
	OnFrame func(identity string, frame []byte, err error)
}

// Listener is a bound endpoint shared by every inbound pipe.
//
// The identity a listener reports and takes is the key of one inbound
// connection. A transport that lets a dialer's identity pass to a new
// connection while an event or frame of its closed one may still be on
// its way keys each connection apart (zmq: the identity, '#', the
// connection's number, never reused in the process; see KeyIdentity), so
// the owner never takes the old connection's close, frames or sends for
// the new one's. memnet's keys are the dialers' identities (its dialers
// are nodes' pipes, which take a new identity for every dial).
//
// Recv is called by one goroutine at a time; Send may be called from many
// goroutines at once (one per inbound pipe writer); Close may be called at
// any time, more than once, and unblocks Recv.
type Listener interface {
	// Addr is the bound address (a *net.TCPAddr for both implementations).
	Addr() net.Addr
	// Recv blocks until a frame arrives and returns the sender's identity
	// and the frame. The frame belongs to the caller. A message that is
	// not exactly (identity, frame) returns an error wrapping ErrMalformed;
	// the listener stays usable. After Close it returns an error wrapping
	// ErrClosed.
	Recv() (identity string, frame []byte, err error)
	// Send queues frame for the pipe of identity (its key) and returns once the
	// transport no longer needs frame (the caller may reuse it). A send to
	// an unknown or closed identity is dropped silently (nil). It may block
	// while the peer does not read, at most the transport's write timeout.
	Send(identity, frame []byte) error
	// Disconnect closes the inbound connection of identity once what was
	// sent to it has gone out (a refused or lost pipe's connection, which
	// the peer would otherwise keep open). Unknown identities are ignored.
	Disconnect(identity string)
	// Authenticated reports that the inbound connection of identity
	// passed the node's handshake: until then it counts against the
	// listener's caps on connections still in their handshake (a
	// stranger that never authenticates holds a bounded, expiring slot).
	// Unknown identities are ignored. It does not block.
	Authenticated(identity string)
	// Close unbinds the endpoint and closes every inbound connection.
	Close() error
}

// Conn is one outbound pipe.
//
// Send is called by one goroutine (the pipe's writer) and Recv by another
// (its reader); Close may be called at any time, more than once, and
// unblocks both.
type Conn interface {
	// Send writes frame and returns once the transport no longer needs it
	// (the caller may reuse it). It may block while the peer does not
	// read, at most the transport's write timeout; an error means the
	// connection is unusable.
	Send(frame []byte) error
	// Recv blocks until a frame arrives. A message that is not one frame
	// returns an error wrapping ErrMalformed (the connection stays
	// usable); any other error means the connection is lost (io.EOF when
	// the peer went away) or closed (ErrClosed).
	Recv() ([]byte, error)
	// Close closes the connection.
	Close() error
}

// TrySender is a Conn that can write one small message without blocking.
// msg is one frame with its first HeaderRoom bytes left for the
// transport's header (the frame itself is msg[HeaderRoom:], at most
// TryMax bytes); the transport may write into that room. TrySend reports
// whether msg went out (or is on its way without the caller); false with
// a nil error when it cannot go out at once — the caller then uses Send.
// An error means the connection is unusable.
type TrySender interface {
	TrySend(msg []byte) (sent bool, err error)
}

// TryRouter is a Listener that can write one small message to an inbound
// pipe without blocking, as TrySender does.
type TryRouter interface {
	TrySend(identity, msg []byte) (sent bool, err error)
}

// HeaderRoom is the room a TrySend message leaves before its frame.
const HeaderRoom = 2

// TryMax is the largest frame a TrySend message carries.
const TryMax = 255

// KeyIdentity is the dialer's identity in a listener's connection key.
func KeyIdentity(key string) string { return zguard.KeyIdentity(key) }
