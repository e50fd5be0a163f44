package spot

import (
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
	// once instead of at the deadline; the handler did not run.
	ErrCycle = zerr.ErrCycle
	// ErrFenced: the owner lost its ownership lease while the call was in
	// its hands; the turn may or may not have run. Never retried
	// automatically.
	ErrFenced = zerr.ErrFenced
	// ErrOutcomeUnknown: the turn ran, but the save a ReplyAfterWrite
	// kind's reply waits for failed without a clear answer (a store
	// timeout, a reset connection): the change may or may not be durable.
	// The activation re-reads its state from the store before its next
	// turn, so it holds what the store holds.
	ErrOutcomeUnknown = zerr.ErrOutcomeUnknown
	// ErrRole: the node's object role does not allow it (role None calls
	// no Spot; only an Object Server hosts).
	ErrRole = zerr.ErrRole
	// ErrNotEnabled: spot.Enable was not called on the node's builder.
	ErrNotEnabled = zerr.ErrNotEnabled
	// ErrUnknownKind: the kind is not registered on the Object Server.
	ErrUnknownKind = zerr.ErrUnknownKind
	// ErrConfig: a refused kind or runtime setting (Enable, NewKind). It
	// also matches zlink.ErrConfig, like every startup refusal.
	ErrConfig = zerr.ErrSpotConfig
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
