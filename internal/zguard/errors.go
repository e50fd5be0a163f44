package zguard

import (
	"errors"
	"fmt"
)

var (
	// ErrFrameTooLarge: a frame header announced more than Config.MaxFrame
	// bytes (or a handshake command more than 64 KiB).
	ErrFrameTooLarge = errors.New("zlink: zmtp frame too large")
	// ErrHandshakeTimeout: the peer did not complete its greeting and READY
	// within Config.HandshakeTimeout, or zmq4 dropped the connection after
	// the handshake without ever reading it.
	ErrHandshakeTimeout = errors.New("zlink: zmtp handshake timeout")
	// ErrDuplicateIdentity: the peer's READY announced an identity that is
	// already live on the same listener.
	ErrDuplicateIdentity = errors.New("zlink: duplicate zmtp identity")
	// ErrTooManyPending: a cap on the accepted connections still in their
	// handshake was reached (Config.MaxPendingHandshakes, its part left to
	// strangers, or Config.MaxPendingPerSource). The reason is a
	// *PendingLimitError.
	ErrTooManyPending = errors.New("zlink: too many pending zmtp handshakes")
	// ErrTooManyFromSource: Config.MaxPendingPerSource connections of the
	// same source were already in their handshake (it matches
	// ErrTooManyPending too).
	ErrTooManyFromSource = errors.New("zlink: too many pending zmtp handshakes from one source")
	// ErrNoGreeting: an accepted connection sent nothing at all within
	// Config.FirstByteTimeout (it matches ErrHandshakeTimeout too).
	ErrNoGreeting = fmt.Errorf("%w: nothing sent after connecting", ErrHandshakeTimeout)
	// ErrNotAuthenticated: with Config.AwaitAuth, an accepted connection
	// was not reported authenticated within Config.AuthTimeout of its
	// accept.
	ErrNotAuthenticated = errors.New("zlink: connection not authenticated in time")
	// ErrWriteTimeout: a write made no progress for Config.WriteTimeout.
	ErrWriteTimeout = errors.New("zlink: zmtp write timeout")
	// ErrBadGreeting: the peer's 64-byte greeting has no ZMTP signature.
	ErrBadGreeting = errors.New("zlink: bad zmtp greeting")
	// ErrMalformedCommand: a handshake command (READY) is not well formed.
	ErrMalformedCommand = errors.New("zlink: malformed zmtp command")
	// ErrClosedLocally is the ConnEvent.Reason of a connection closed by
	// this process (zmq4 closing it, or its listener closing).
	ErrClosedLocally = errors.New("zlink: connection closed locally")
	// ErrSilent: an accepted connection sent no message within
	// Config.HandshakeTimeout of its READY (it holds a connection and says
	// nothing).
	ErrSilent = errors.New("zlink: no message after the zmtp handshake")
	// ErrDisconnected is the ConnEvent.Reason of an inbound connection its
	// socket's owner closed with Inbound.Disconnect (it matches
	// ErrClosedLocally too).
	ErrDisconnected = fmt.Errorf("%w: disconnected by its owner", ErrClosedLocally)
	// ErrBadEndpoint: Endpoint got an endpoint that is not tcp://host:port.
	ErrBadEndpoint = errors.New("zlink: endpoint is not tcp://")
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("zlink: invalid zguard config")
	// ErrNotConnected: a direct send found no live connection (the identity
	// is not connected to any listener of the Inbound, or the Outbound's
	// dial has not succeeded or its connection is gone).
	ErrNotConnected = errors.New("zlink: no live zmtp connection")
	// ErrMidMessage: a direct send found the connection in the middle of a
	// message zmq4 is writing (a PONG it answers to a peer's PING, say).
	// The connection is closed: its byte stream can no longer be trusted.
	ErrMidMessage = errors.New("zlink: zmtp connection in the middle of a message")
	// ErrMultipart: a direct read met a message of more than one frame
	// (this transport's peers send one frame per message). The message is
	// skipped; the connection stays usable.
	ErrMultipart = errors.New("zlink: multipart zmtp message")
)

// FrameTooLargeError is the reason a connection was closed for announcing a
// frame over the limit. It matches ErrFrameTooLarge with errors.Is.
type FrameTooLargeError struct {
	Size    uint64 // length announced by the frame header
	Limit   uint64 // limit in force for this frame
	Command bool   // the frame was a ZMTP command
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("%v: %d bytes announced, limit %d", ErrFrameTooLarge, e.Size, e.Limit)
}

// Is reports whether target is ErrFrameTooLarge.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }
