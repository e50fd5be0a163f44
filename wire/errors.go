package wire

import (
	"errors"
	"strconv"
	"strings"

	"github.com/zlink-go/zlink/internal/msgp"
	"github.com/zlink-go/zlink/internal/zerr"
)

// Terminal request errors: aliases of the values in internal/zerr, kept
// so existing call sites compile.
//
// Deprecated: match the values of package zlink (zlink.ErrNoTarget, …);
// inside the module use internal/zerr. These names go away in the next
// release.
var (
	ErrNoTarget      = zerr.ErrNoTarget
	ErrTimeout       = zerr.ErrTimeout
	ErrMailboxFull   = zerr.ErrMailboxFull
	ErrBusy          = zerr.ErrBusy
	ErrPeerLost      = zerr.ErrPeerLost
	ErrTooLarge      = zerr.ErrTooLarge
	ErrHandler       = zerr.ErrHandler
	ErrCancelled     = zerr.ErrCancelled
	ErrShuttingDown  = zerr.ErrShuttingDown
	ErrProtocol      = zerr.ErrProtocol
	ErrUnknownPacket = zerr.ErrUnknownPacket
	ErrBadPayload    = zerr.ErrBadPayload
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

// Codes that cross the wire: those of the terminal results' table
// (internal/zerr.Table, the one place that defines each result's code,
// name and whether the handler ran). Values are part of the protocol:
// append only.
const (
	CodeNoTarget      Code = 1
	CodeTimeout       Code = 2
	CodeMailboxFull   Code = 3
	CodeBusy          Code = 4
	CodePeerLost      Code = 5
	CodeTooLarge      Code = 6
	CodeHandler       Code = 7
	CodeCancelled     Code = 8
	CodeShuttingDown  Code = 9
	CodeProtocol      Code = 10
	CodeUnknownPacket Code = 11
	CodeBadPayload    Code = 12
	// The Spot results (codes 1000 and up).
	CodeCycle          Code = 1000
	CodeFenced         Code = 1001
	CodeOutcomeUnknown Code = 1002
)

// String returns a lower_snake name usable as a metrics label.
func (c Code) String() string {
	if r, ok := zerr.ByCode(uint16(c)); ok {
		return r.Name
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Sentinel returns the error a code stands for; unknown codes stand for
// ErrHandler.
func (c Code) Sentinel() error {
	if r, ok := zerr.ByCode(uint16(c)); ok {
		return r.Err
	}
	return zerr.ErrHandler
}

// CodeOf maps an error to the code sent in an Error envelope: a *RemoteError
// keeps its code (so relayed errors are not rewritten), a sentinel matched
// with errors.Is (wrapped or typed, e.g. *mailbox.FullError) gives its code
// (a Spot result before a RouteMesh one it wraps), context.Canceled gives
// CodeCancelled, context.DeadlineExceeded gives CodeTimeout, and anything
// else is CodeHandler. CodeOf(nil) is 0.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	if re, ok := errors.AsType[*RemoteError](err); ok && re.Code != 0 {
		return re.Code
	}
	return Code(zerr.Table[zerr.RowOf(err, true)].Code)
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
// The sender's text usually starts with the sentinel's own text (a handler
// error wrapped as "zlink: handler failed: …"); that prefix is dropped from
// Message, because Error adds it back, so the rebuilt text reads it once.
func ErrorOf(code Code, msg string) error {
	s := code.Sentinel().Error()
	for {
		if msg == s {
			msg = ""
		}
		rest, ok := strings.CutPrefix(msg, s+": ")
		if !ok {
			break
		}
		msg = rest
	}
	return &RemoteError{Code: code, Message: msg}
}

// DecodeError says where and why DecodeFrame gave up (the module's one
// msgpack reader's error). It matches ErrProtocol.
type DecodeError = msgp.Error

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
func (e *VersionError) Is(target error) bool {
	return target == zerr.ErrProtocol || target == ErrVersion
}

// TooLargeError reports a size over a limit. It matches ErrTooLarge.
type TooLargeError struct {
	Size  uint64 // bytes (or elements) asked for
	Limit uint64 // the limit it exceeds
}

func (e *TooLargeError) Error() string {
	return "zlink: too large: " + strconv.FormatUint(e.Size, 10) + " > " + strconv.FormatUint(e.Limit, 10)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == zerr.ErrTooLarge }

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
