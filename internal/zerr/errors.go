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

// ErrConfig matches every configuration refusal (Start's validation, a
// runtime setting refused). Specific refusals match it and a sentinel of
// their own.
var ErrConfig = errors.New("zlink: configuration error")

// Results of Spot calls and operations, besides the terminal results above.
var (
	// ErrCycle: the call would wait, directly or through other Spots, on a
	// turn that is itself waiting on this call; it ends at once. The
	// handler did not run.
	ErrCycle = errors.New("zlink: spot call cycle")
	// ErrFenced: the owner lost its ownership lease while the call was in
	// its hands; the turn may or may not have run.
	ErrFenced = errors.New("zlink: spot owner fenced")
	// ErrOutcomeUnknown: the turn ran, but the save its reply waited for
	// (ReplyAfterWrite) failed in a way that may or may not have reached the
	// store; the change may or may not be durable. The activation re-reads
	// its state from the store before its next turn.
	ErrOutcomeUnknown = errors.New("zlink: spot outcome unknown")
	// ErrRole: the node's object role does not allow it.
	ErrRole = errors.New("zlink: object role does not allow this")
	// ErrNotEnabled: the Spot runtime is not attached to the MeshNode.
	ErrNotEnabled = errors.New("zlink: spots not enabled on this MeshNode")
	// ErrUnknownKind: the Spot kind is not registered on the node.
	ErrUnknownKind = errors.New("zlink: unknown spot kind")
	// ErrNoOwner: nobody owns the Spot (its ownership record is missing,
	// released, or names an owner whose lease is gone).
	ErrNoOwner = errors.New("zlink: spot has no owner")
	// ErrSpotConfig: a refused Spot kind or runtime setting; it also
	// matches ErrConfig.
	ErrSpotConfig error = &subConfig{msg: "zlink: spot configuration error"}
)

// subConfig is a specific configuration sentinel that also matches
// ErrConfig.
type subConfig struct{ msg string }

func (e *subConfig) Error() string        { return e.msg }
func (e *subConfig) Is(target error) bool { return target == ErrConfig }
