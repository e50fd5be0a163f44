package liveness

import (
	"fmt"
	"time"
)

// Config sets the heartbeat cadence and the two loss thresholds.
type Config struct {
	// Interval is the time between two heartbeats sent to the peer.
	// Default 500 ms. Must be > 0.
	Interval time.Duration
	// MaxGap is the largest tolerated number of heartbeats sent and not
	// yet matched by a received one. The peer is lost when the gap exceeds
	// it, that is after MaxGap+1 unanswered heartbeats. Default 5. Must be
	// >= 1.
	MaxGap int
	// LastHeard is how long the peer may stay completely silent (no
	// heartbeat, no other frame). The peer is lost once nothing has been
	// heard for LastHeard or longer. Default 3 s. Must be >= Interval.
	LastHeard time.Duration
}

// DefaultConfig returns interval 500 ms, max gap 5, last-heard 3 s.
func DefaultConfig() Config {
	return Config{Interval: 500 * time.Millisecond, MaxGap: 5, LastHeard: 3 * time.Second}
}

// Validate reports a field out of range, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("%w: Interval %v must be positive", ErrInvalidConfig, c.Interval)
	case c.MaxGap < 1:
		return fmt.Errorf("%w: MaxGap %d must be at least 1", ErrInvalidConfig, c.MaxGap)
	case c.LastHeard < c.Interval:
		return fmt.Errorf("%w: LastHeard %v must be at least Interval %v", ErrInvalidConfig, c.LastHeard, c.Interval)
	}
	return nil
}
