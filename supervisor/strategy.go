package supervisor

import (
	"errors"
	"fmt"
	"time"
)

// Config describes how an actor supervises its children.
type Config struct {
	// Kind is OneForOne (restart only the failing child) or AllForOne
	// (restart every child of the supervisor). Default OneForOne.
	//
	Kind Kind
	// MaxRestarts is the restart intensity: at most this many restarts of a
	// child within Within; the next failure is escalated to the
	// supervisor's own parent. 0 means the default 3; negative means never
	// restart (escalate the first failure).
	MaxRestarts int
	// Within is the intensity window. Default 10s.
	Within time.Duration
	// Backoff is the delay before the first restart in a window; it doubles
	// with every further failure in the window. 0 = restart at once.
	Backoff time.Duration
	// MaxBackoff caps the backoff delay. 0 = no cap.
	MaxBackoff time.Duration
	// OnGiveUp, when set, ends escalation at this supervisor: past the
	// restart intensity the failing child is stopped (not escalated) and
	// OnGiveUp is called with its path and the last failure reason. The
	// host uses it to turn an unrecoverable MeshNode into a visible Failed
	// state. It runs on the supervisor's goroutine and must not block.
	OnGiveUp func(child string, reason any)
}

// DefaultConfig returns one-for-one, 3 restarts within 10s, no backoff.
func DefaultConfig() Config {
	return Config{Kind: OneForOne, MaxRestarts: 3, Within: 10 * time.Second}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Kind == 0 {
		c.Kind = d.Kind
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = d.MaxRestarts
	}
	if c.Within <= 0 {
		c.Within = d.Within
	}
	return c
}

// IsDefault reports whether c behaves as DefaultConfig (zero fields take
// the defaults) and has no OnGiveUp: such strategies hold no state of
// their own and can be shared.
func (c Config) IsDefault() bool {
	d, w := DefaultConfig(), c.withDefaults()
	return c.OnGiveUp == nil && w.Kind == d.Kind && w.MaxRestarts == d.MaxRestarts && w.Within == d.Within &&
		w.Backoff == d.Backoff && w.MaxBackoff == d.MaxBackoff
}

// WithDefaults returns c with every zero field set to its default (see
// the field docs): the Config a supervisor runs with.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// Validate reports whether c (with defaults applied) is usable.
func (c Config) Validate() error { return c.withDefaults().validate() }

func (c Config) validate() error {
	if c.Kind != OneForOne && c.Kind != AllForOne {
		return fmt.Errorf("zlink: supervisor: invalid kind %v", c.Kind)
	}
	if c.Backoff < 0 || c.MaxBackoff < 0 {
		return errors.New("zlink: supervisor: negative backoff")
	}
	return nil
}
