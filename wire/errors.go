package wire

import (
	"context"
	"errors"
	"strconv"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/mailbox"
)

// Terminal request errors (SPEC §7). Each has a Code so the receiver of an
// Error envelope rebuilds the same sentinel with ErrorOf.
var (
	// ErrNoTarget: no positive-weight candidate, or the node-direct target is
	// unknown or an Object Client.
	ErrNoTarget = errors.New("zlink: no target")
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

	// ErrTimeout is actors.ErrTimeout, re-exported so wire users need one import.
	ErrTimeout = actors.ErrTimeout
	// ErrMailboxFull is mailbox.ErrMailboxFull, re-exported.
	ErrMailboxFull = mailbox.ErrMailboxFull
)

// Non-terminal wire errors.
var (
	// ErrVersion: the frame carries an unknown protocol version or frame
	// type. It always comes inside an error that also matches ErrProtocol;
	// a handshake answers it with Reject(RejectVersion).
	ErrVersion = errors.New("zlink: unsupported protocol version")
	// ErrDuplicatePacket: a packet name was registered twice with different
	// Go types.
	ErrDuplicatePacket = errors.New("zlink: duplicate packet")
)

// Code is the numeric form of a terminal error on the wire. Zero is not a
// valid code.
type Code uint16

// Codes that cross the wire. Values are part of the protocol: append only.
const (
	CodeNoTarget Code = 1 + iota
	CodeTimeout
	CodeMailboxFull
	CodeBusy
	CodePeerLost
	CodeTooLarge
	CodeHandler
	CodeCancelled
	CodeShuttingDown
	CodeProtocol
	CodeUnknownPacket
	CodeBadPayload

	codeEnd // one past the last code
)

var codeNames = [...]string{
	CodeNoTarget:      "no_target",
	CodeTimeout:       "timeout",
	CodeMailboxFull:   "mailbox_full",
	CodeBusy:          "busy",
	CodePeerLost:      "peer_lost",
	CodeTooLarge:      "too_large",
	CodeHandler:       "handler",
	CodeCancelled:     "cancelled",
	CodeShuttingDown:  "shutting_down",
	CodeProtocol:      "protocol",
	CodeUnknownPacket: "unknown_packet",
	CodeBadPayload:    "bad_payload",
}

// String returns a lower_snake name usable as a metrics label.
func (c Code) String() string {
	if c >= 1 && c < codeEnd {
		return codeNames[c]
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Sentinel returns the error a code stands for; unknown codes stand for
// ErrHandler.
func (c Code) Sentinel() error {
	switch c {
	case CodeNoTarget:
		return ErrNoTarget
	case CodeTimeout:
		return ErrTimeout
	case CodeMailboxFull:
		return ErrMailboxFull
	case CodeBusy:
		return ErrBusy
	case CodePeerLost:
		return ErrPeerLost
	case CodeTooLarge:
		return ErrTooLarge
	case CodeCancelled:
		return ErrCancelled
	case CodeShuttingDown:
		return ErrShuttingDown
	case CodeProtocol:
		return ErrProtocol
	case CodeUnknownPacket:
		return ErrUnknownPacket
	case CodeBadPayload:
		return ErrBadPayload
	default:
		return ErrHandler
	}
}

// CodeOf maps an error to the code sent in an Error envelope: a *RemoteError
// keeps its code (so relayed errors are not rewritten), a sentinel matched
// with errors.Is (wrapped or typed, e.g. *mailbox.FullError) gives its code,
// context.Canceled gives CodeCancelled, context.DeadlineExceeded gives
// CodeTimeout, and anything else is CodeHandler. CodeOf(nil) is 0.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	if re, ok := errors.AsType[*RemoteError](err); ok && re.Code != 0 {
		return re.Code
	}
	for c := Code(1); c < codeEnd; c++ {
		if c == CodeHandler {
			continue
		}
		if errors.Is(err, c.Sentinel()) {
			return c
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeHandler
}

// RemoteError is a terminal error rebuilt from an Error envelope. It matches
// its code's sentinel with errors.Is and unwraps to it.
type RemoteError struct {
	Code    Code   // the code on the wire
	Message string // the peer's error text (may be empty)
}

// Error returns the sentinel text followed by the remote message.
func (e *RemoteError) Error() string {
	s := e.Code.Sentinel().Error()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is the sentinel of e.Code.
func (e *RemoteError) Is(target error) bool { return target == e.Code.Sentinel() }

// Unwrap returns the sentinel of e.Code.
func (e *RemoteError) Unwrap() error { return e.Code.Sentinel() }

// ErrorOf rebuilds the error an Error envelope carries, so errors.Is(err,
// ErrBusy) and friends hold on the caller. It always returns a *RemoteError.
func ErrorOf(code Code, msg string) error {
	return &RemoteError{Code: code, Message: msg}
}

// DecodeError says where and why DecodeFrame gave up. It matches ErrProtocol.
type DecodeError struct {
	Offset int    // byte offset in the frame where the problem was found
	Reason string // constant text
}

func (e *DecodeError) Error() string {
	return "zlink: protocol error: " + e.Reason + " at offset " + strconv.Itoa(e.Offset)
}

// Is reports whether target is ErrProtocol.
func (e *DecodeError) Is(target error) bool { return target == ErrProtocol }

// VersionError reports a frame from a protocol version or with a frame type
// this build does not speak. It matches both ErrProtocol and ErrVersion.
type VersionError struct {
	Version uint16    // the version in the frame
	Type    FrameType // the frame type, when the version was known
}

func (e *VersionError) Error() string {
	if e.Version != ProtocolVersion {
		return "zlink: unsupported protocol version " + strconv.Itoa(int(e.Version))
	}
	return "zlink: unsupported frame type " + e.Type.String()
}

// Is reports whether target is ErrProtocol or ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrProtocol || target == ErrVersion }

// TooLargeError reports a size over a limit. It matches ErrTooLarge.
type TooLargeError struct {
	Size  uint64 // bytes (or elements) asked for
	Limit uint64 // the limit it exceeds
}

func (e *TooLargeError) Error() string {
	return "zlink: too large: " + strconv.FormatUint(e.Size, 10) + " > " + strconv.FormatUint(e.Limit, 10)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// CheckLimit returns a *TooLargeError when size exceeds limit (a peer's
// Identity.RecvLimit) or the wire's MaxFrameSize; a limit of 0 means only
// MaxFrameSize applies. Senders call it before sending so an oversized
// message ends at once with ErrTooLarge and never reaches the wire.
func CheckLimit(size int, limit uint64) error {
	if limit == 0 || limit > MaxFrameSize {
		limit = MaxFrameSize
	}
	if size < 0 || uint64(size) > limit {
		return &TooLargeError{Size: uint64(size), Limit: limit}
	}
	return nil
}
