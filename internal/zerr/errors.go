package zerr

import "errors"

// Terminal results of a call. Every one of them has a wire code
// (wire.Code) so the caller of a remote call gets the same value back.
var (
	// ErrNoTarget: no positive-weight candidate, or the node-direct target is
	// unknown or an Object Client.
	ErrNoTarget = errors.New("zlink: no target")
	// ErrTimeout: a request found no reply before its deadline.
	ErrTimeout = errors.New("zlink: timeout")
	// ErrMailboxFull: an owner's mailbox refused a message because its
	// message budget or its byte budget is spent (see mailbox.FullError).
	ErrMailboxFull = errors.New("zlink: mailbox full")
	// ErrBusy: admission refused (every candidate at capacity).
	ErrBusy = errors.New("zlink: busy")
	// ErrPeerLost: the connection to the chosen node was lost after submit;
	// the outcome is unknown.
	ErrPeerLost = errors.New("zlink: peer lost")
	// ErrTooLarge: a message or frame exceeds the receiver's stated limit or
	// the wire's representation limit.
	ErrTooLarge = errors.New("zlink: too large")
	// ErrHandler: the remote handler failed; the message is carried.
	ErrHandler = errors.New("zlink: handler failed")
	// ErrCancelled: the caller's context ended the call.
	ErrCancelled = errors.New("zlink: cancelled")
	// ErrShuttingDown: the node no longer admits new operations.
	ErrShuttingDown = errors.New("zlink: shutting down")
	// ErrProtocol: the peer sent bytes that do not follow the wire protocol.
	ErrProtocol = errors.New("zlink: protocol error")
	// ErrUnknownPacket: no handler or codec is registered for the packet name.
	ErrUnknownPacket = errors.New("zlink: unknown packet")
	// ErrBadPayload: a payload does not decode into the packet's Go type (or
	// a value of the wrong type was handed to a codec).
	ErrBadPayload = errors.New("zlink: bad payload")
)

// ErrStopped is returned when a message is sent to an actor that has
// stopped or is stopping and no longer admits work, and by Spawn once the
// actor system has shut down.
var ErrStopped = errors.New("zlink: actor stopped")

// ErrNeedsLocationStore refuses an automatic topology (a MeshNode with a
// RID prefix or an object role, an automatic fanout publisher or
// subscriber) that has no Location Store to read and write descriptors.
var ErrNeedsLocationStore = errors.New("zlink: automatic topology needs an explicitly configured Location Store")
