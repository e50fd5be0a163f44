package location

import (
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// maxCorruptKeys bounds the keys remembered for once-per-key warnings;
// beyond it every report logs at debug level.
const maxCorruptKeys = 1024

// RedisStats is a snapshot of a Redis store's counters.
type RedisStats struct {
	// CorruptRecords counts records read back that did not decode, were
	// invalid or contradicted their key: skipped by a listing, or returned
	// as ErrCorrupt by GetDescriptor or the Spot directory. The same
	// stored record counts once per read.
	CorruptRecords uint64
	// ReplicaWaits counts Spot directory writes followed by WAIT 1
	// (RedisConfig.ReplicaAcks).
	ReplicaWaits uint64
	// UnconfirmedWrites counts Spot directory writes that failed with
	// ErrUnconfirmed.
	UnconfirmedWrites uint64
	// Errors counts operations Redis did not answer as asked: the
	// connection failed, the deadline passed, the server replied with an
	// error. Refusals decided by the store's rules (ErrNotFound,
	// ErrFenced, ErrExists, ErrInvalid), corrupt records and calls after
	// Close do not count.
	Errors uint64
}

// Stats returns a snapshot of the store's counters.
func (r *Redis) Stats() RedisStats {
	return RedisStats{
		CorruptRecords:    r.corrupt.count.Load(),
		ReplicaWaits:      r.waits.Load(),
		UnconfirmedWrites: r.unconf.Load(),
		Errors:            r.errs.Load(),
	}
}

// corruptLog counts corrupted records and logs each key once at warning
// level. A leaf: mu is taken last and guards only seen.
type corruptLog struct {
	count atomic.Uint64
	mu    sync.Mutex
	seen  map[string]struct{}
}

func (c *corruptLog) report(log zerolog.Logger, key string, err error) {
	c.count.Add(1)
	if len(key) > 2*maxNameLen { // built from a clipped RID: stays short
		key = key[:2*maxNameLen]
	}
	c.mu.Lock()
	_, seen := c.seen[key]
	first := !seen && len(c.seen) < maxCorruptKeys
	if first {
		if c.seen == nil {
			c.seen = make(map[string]struct{})
		}
		c.seen[key] = struct{}{}
	}
	c.mu.Unlock()
	ev := log.Debug()
	if first {
		ev = log.Warn()
	}
	ev.Str("key", key).Err(err).Msg("location: corrupted record skipped")
}
