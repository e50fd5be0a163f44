package spot

import (
	"errors"
	"strings"

	"github.com/zlink-go/zlink/internal/zerr"
)

// Errors a Spot call can end with, besides the RouteMesh's terminal
// results (ErrTimeout, ErrBusy, ErrPeerLost, ErrHandler, ErrShuttingDown,
// ...). Match them with errors.Is.
var (
	// ErrNoTarget: no ready, non-draining Object Server can host the Spot,
	// or the call was redirected more than twice.
	ErrNoTarget = zerr.ErrNoTarget
	// ErrHandler: the Spot's handler returned an error or panicked (the
	// Spot then restarts with the same identity).
	ErrHandler = zerr.ErrHandler
	// ErrCycle: the call would wait, directly or through other Spots, on a
	// turn that is itself waiting on this call (a deadlock). It ends at
	// once instead of at the deadline.
	ErrCycle = errors.New("zlink: spot call cycle")
	// ErrFenced: the owner lost its ownership lease while the call was in
	// its hands; the turn may or may not have run. Never retried
	// automatically.
	ErrFenced = errors.New("zlink: spot owner fenced")
	// ErrRole: the node's object role does not allow it (role None calls
	// no Spot; only an Object Server hosts).
	ErrRole = errors.New("zlink: object role does not allow this")
	// ErrNotEnabled: spot.Enable was not called on the node's builder.
	ErrNotEnabled = errors.New("zlink: spots not enabled on this MeshNode")
	// ErrUnknownKind: the kind is not registered on the Object Server.
	ErrUnknownKind = errors.New("zlink: unknown spot kind")
	// ErrConfig: a refused kind or runtime setting (Enable, NewKind).
	ErrConfig = errors.New("zlink: spot configuration error")
)

// sentinelError carries a remote message under a local sentinel.
type sentinelError struct {
	sentinel error
	msg      string
}

func (e *sentinelError) Error() string {
	s := e.sentinel.Error()
	if m := strings.TrimPrefix(e.msg, s+": "); m != "" && m != s {
		return s + ": " + m
	}
	return s
}

func (e *sentinelError) Unwrap() error { return e.sentinel }

func spotError(sentinel error, msg string) error { return &sentinelError{sentinel: sentinel, msg: msg} }
