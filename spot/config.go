package spot

import (
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
	"github.com/zlink-go/zlink/location"
)

// Config is the Spot runtime of one MeshNode. Zero fields take the
// defaults of DefaultConfig.
type Config struct {
	// LeaseTTL is the ownership lease: a node that dies keeps its Spots
	// for at most this long (+ Margin). Default 6 s.
	LeaseTTL time.Duration
	// RenewEvery is how often the lease is renewed; LeaseTTL must be at
	// least 3 × RenewEvery + Margin. Default 1 s.
	RenewEvery time.Duration
	// Margin bounds a process pause between a lease check and the act it
	// guards. Default 1 s.
	Margin time.Duration
	// Drift bounds the relative clock drift between a node and a Redis
	// shard (ρ). Default 0.001.
	Drift float64
	// CacheSize bounds the caller cache (kind, ID) → owner. Default 65536.
	CacheSize int
	// MaxHops is how many redirects a call follows before ErrNoTarget.
	// Default 2.
	MaxHops int
	// StoreTimeout bounds each Location Store step of a claim or release.
	// Default 2 s.
	StoreTimeout time.Duration
	// Rebalance, when above 0, moves this node's Spots of persistent kinds
	// toward the Object Server placement now picks for them after the
	// membership changes — at most this many per second, idle ones first.
	// Default 0: off (a live owner keeps its Spots).
	Rebalance float64
	// ReminderScan is how often each part of a kind's reminder index is
	// read by the Object Server in charge of it (one read per part per
	// scan, whatever the number of reminders): the bound on a reminder's
	// lateness, less the delivery. Default 1 s; at least 10 ms.
	ReminderScan time.Duration
	// States is where persistent kinds save their state. Default: the
	// node's Location Store (the state then shares each Spot's hash tag
	// with its ownership record, which a fenced write needs).
	States location.SpotStates
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{LeaseTTL: 6 * time.Second, RenewEvery: time.Second, Margin: time.Second, Drift: 0.001,
		CacheSize: 1 << 16, MaxHops: 2, StoreTimeout: 2 * time.Second, ReminderScan: time.Second}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.LeaseTTL == 0 {
		c.LeaseTTL = d.LeaseTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = d.RenewEvery
	}
	if c.Margin == 0 {
		c.Margin = d.Margin
	}
	if c.Drift == 0 {
		c.Drift = d.Drift
	}
	if c.CacheSize == 0 {
		c.CacheSize = d.CacheSize
	}
	if c.MaxHops == 0 {
		c.MaxHops = d.MaxHops
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = d.StoreTimeout
	}
	if c.ReminderScan == 0 {
		c.ReminderScan = d.ReminderScan
	}
	return c
}

func (c Config) fence() fence.Config {
	return fence.Config{TTL: c.LeaseTTL, RenewEvery: c.RenewEvery, Rho: c.Drift, Margin: c.Margin}
}

func (c Config) validate() error {
	if err := c.fence().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.CacheSize < 0 || c.MaxHops < 0 || c.StoreTimeout < 0 || c.Rebalance < 0 {
		return fmt.Errorf("%w: cache %d, hops %d, store timeout %v", ErrConfig, c.CacheSize, c.MaxHops, c.StoreTimeout)
	}
	if c.ReminderScan < 10*time.Millisecond {
		return fmt.Errorf("%w: reminder scan every %v (at least 10ms)", ErrConfig, c.ReminderScan)
	}
	return nil
}

// tombstoneTTL keeps a dead lease's tombstone (at least 10 × the TTL).
func (c Config) tombstoneTTL() time.Duration { return 10 * c.LeaseTTL }
