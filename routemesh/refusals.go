package routemesh

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/internal/zguard"
)

// refusalLogEvery is the least time between two warnings about inbound
// connections refused before their handshake.
const refusalLogEvery = 10 * time.Second

// refusalLog counts the inbound connections the listener's guards refused
// and logs them rate-limited: a flood of strangers (thousands a second)
// makes one warning per refusalLogEvery, which says how many were refused
// since the one before and names the last. TLS refusals are logged by
// tlsLog, once per peer; they are counted here too.
type refusalLog struct {
	log   zerolog.Logger
	count *atomic.Uint64
	now   func() time.Time

	mu     sync.Mutex
	last   time.Time // of the last warning; zero before the first
	silent uint64    // refused since the last warning, not logged
}

func newRefusalLog(log zerolog.Logger, count *atomic.Uint64, now func() time.Time) *refusalLog {
	return &refusalLog{log: log, count: count, now: now}
}

// refused is the listener's Events.OnRefused.
func (r *refusalLog) refused(remote string, reason error) {
	r.count.Add(1)
	if errors.Is(reason, zguard.ErrTLS) {
		return
	}
	now := r.now()
	r.mu.Lock()
	r.silent++
	if !r.last.IsZero() && now.Sub(r.last) < refusalLogEvery {
		r.mu.Unlock()
		return
	}
	n := r.silent
	r.last, r.silent = now, 0
	r.mu.Unlock()
	r.log.Warn().Uint64("refused", n).Str("remote", remote).Str("refusal", refusalKind(reason)).Err(reason).
		Msg("inbound mesh connections refused before their handshake")
}

// refusalKind names the kind of a refusal for logs.
func refusalKind(err error) string {
	switch {
	case errors.Is(err, zguard.ErrTooManyFromSource):
		return "too_many_pending_from_source"
	case errors.Is(err, zguard.ErrTooManyPending):
		return "too_many_pending"
	case errors.Is(err, zguard.ErrNoGreeting):
		return "silent_after_connect"
	case errors.Is(err, zguard.ErrHandshakeTimeout):
		return "handshake_timeout"
	case errors.Is(err, zguard.ErrSilent):
		return "silent_after_handshake"
	case errors.Is(err, zguard.ErrNotAuthenticated):
		return "not_authenticated"
	case errors.Is(err, zguard.ErrFrameTooLarge):
		return "frame_too_large"
	case errors.Is(err, zguard.ErrDuplicateIdentity):
		return "duplicate_identity"
	default:
		return "malformed_handshake"
	}
}
