package fence

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig is returned by Config.Validate.
var ErrInvalidConfig = errors.New("zlink: fence: invalid configuration")

// Config is the lease timing of one Object Server.
type Config struct {
	// TTL is the lease's time to live on the store. Default 6 s.
	TTL time.Duration
	// RenewEvery is the renewal period. Default 1 s.
	RenewEvery time.Duration
	// Rho bounds the relative drift between any node's clock and any
	// store shard's clock (0.001 = 1 ms per second). Default 0.001.
	Rho float64
	// Margin bounds a process pause between a check of Valid and the act
	// it guards, plus the slack for everything else. Default 1 s.
	Margin time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{TTL: 6 * time.Second, RenewEvery: time.Second, Rho: 0.001, Margin: time.Second}
}

// Validate refuses settings under which the deadline cannot work: a TTL
// below 3 × RenewEvery + Margin (a single lost renewal would fence the
// node), a drift outside [0, 0.1), a negative margin.
func (c Config) Validate() error {
	switch {
	case c.RenewEvery <= 0:
		return fmt.Errorf("%w: RenewEvery %v", ErrInvalidConfig, c.RenewEvery)
	case c.Margin < 0:
		return fmt.Errorf("%w: negative Margin %v", ErrInvalidConfig, c.Margin)
	case c.Rho < 0 || c.Rho >= 0.1:
		return fmt.Errorf("%w: Rho %v outside [0, 0.1)", ErrInvalidConfig, c.Rho)
	case c.TTL < 3*c.RenewEvery+c.Margin:
		return fmt.Errorf("%w: TTL %v below 3 × RenewEvery (%v) + Margin (%v)", ErrInvalidConfig, c.TTL, c.RenewEvery, c.Margin)
	}
	return nil
}

// Lease is an owner's view of its own lease (R1, R2). Times are the
// owner's local monotonic clock. Not safe for concurrent use: one owner
// (outside every restartable actor, so a restart cannot reset it) drives it.
type Lease struct {
	cfg      Config
	deadline time.Time // zero: never acknowledged
	sent     map[uint64]time.Time
	next     uint64
	refused  bool
}

// NewLease returns a lease with no acknowledged write yet (not Valid).
// It panics on an invalid Config (a programming error: validate first).
func NewLease(cfg Config) *Lease {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Lease{cfg: cfg, sent: map[uint64]time.Time{}}
}

// Sent records that a create or renewal left at local time now; Acked
// with the returned token counts it.
func (l *Lease) Sent(now time.Time) uint64 {
	l.next++
	l.sent[l.next] = now
	return l.next
}

// Acked counts the write with token tok: the deadline moves to the time it
// was sent + TTL·(1−ρ) − Margin, never backwards. An unknown token (already
// counted, or from before Refused) changes nothing.
func (l *Lease) Acked(tok uint64) {
	at, ok := l.sent[tok]
	if !ok || l.refused {
		return
	}
	delete(l.sent, tok)
	for k, t := range l.sent { // older writes can no longer move the deadline
		if !t.After(at) {
			delete(l.sent, k)
		}
	}
	d := at.Add(time.Duration(float64(l.cfg.TTL) * (1 - l.cfg.Rho))).Add(-l.cfg.Margin)
	if d.After(l.deadline) {
		l.deadline = d
	}
}

// Lost forgets the write with token tok (the store did not answer).
func (l *Lease) Lost(tok uint64) { delete(l.sent, tok) }

// Refused ends the lease for good: the store refused a renewal (the key is
// gone or tombstoned). The owner fences every Spot and registers again
// under a new generation with a new Lease.
func (l *Lease) Refused() {
	l.refused = true
	clear(l.sent)
}

// Valid reports whether the owner may act at local time now.
func (l *Lease) Valid(now time.Time) bool {
	return !l.refused && !l.deadline.IsZero() && now.Before(l.deadline)
}

// Deadline is the local time until which the owner may act (zero before
// the first acknowledged write).
func (l *Lease) Deadline() time.Time { return l.deadline }
