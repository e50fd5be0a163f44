package supervisor

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Config describes how an actor supervises its children.
type Config struct {
	// Kind is OneForOne (restart only the failing child) or AllForOne
	// (restart every child of the supervisor). Default OneForOne.
	//
	// (Named Kind, not Strategy, because Strategy is the method that builds
	// the protoactor strategy.)
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

// Strategy returns the protoactor SupervisorStrategy for c, recording
// failures, restarts and states in reg. It panics on an invalid Config (a
// programming error). Use it as the props supervisor of an actor that has a
// parent actor to escalate to.
func (c Config) Strategy(reg *Registry) actor.SupervisorStrategy {
	return c.newStrategy(reg, false)
}

// RootStrategy is Strategy for actors whose supervisor is protoactor's
// guardian (top-level actors): always one-for-one, and past the restart
// intensity the child is stopped, since there is no parent to escalate to.
func (c Config) RootStrategy(reg *Registry) actor.SupervisorStrategy {
	return c.newStrategy(reg, true)
}

func (c Config) newStrategy(reg *Registry, root bool) *strategy {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		panic(err)
	}
	if root {
		c.Kind = OneForOne
	}
	return &strategy{cfg: c, reg: reg, root: root, after: afterFunc}
}

func afterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// strategy implements actor.SupervisorStrategy. HandleFailure runs on the
// supervisor's mailbox goroutine (or the child's, for the guardian); it
// never blocks: backoff restarts are scheduled with a timer.
type strategy struct {
	cfg   Config
	reg   *Registry
	root  bool
	after func(time.Duration, func()) // time.AfterFunc; replaced in tests
}

var _ actor.SupervisorStrategy = (*strategy)(nil)

func (s *strategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason, message any,
) {
	path := PathOf(child)
	s.reg.Failed(path, reason, "")

	if err, ok := reason.(error); ok && errors.Is(err, ErrUnrecoverable) {
		s.publish(system, child, reason, actor.StopDirective)
		s.reg.SetState(path, Failed)
		sup.StopChildren(child)
		if s.cfg.OnGiveUp != nil {
			s.cfg.OnGiveUp(path, reason)
		}
		return
	}

	rs.Fail()
	n := rs.NumberOfFailures(s.cfg.Within)
	if s.cfg.MaxRestarts < 0 || n > s.cfg.MaxRestarts {
		rs.Reset()
		if s.root || s.cfg.OnGiveUp != nil {
			s.publish(system, child, reason, actor.StopDirective)
			s.reg.SetState(path, Failed)
			sup.StopChildren(child)
			if s.cfg.OnGiveUp != nil {
				s.cfg.OnGiveUp(path, reason)
			}
			return
		}
		s.publish(system, child, reason, actor.EscalateDirective)
		sup.EscalateFailure(reason, message)
		return
	}

	targets := []*actor.PID{child}
	if s.cfg.Kind == AllForOne {
		targets = sup.Children()
	}
	for _, t := range targets {
		p := PathOf(t)
		s.reg.SetState(p, Restarting)
		s.reg.Restarted(p)
	}
	s.publish(system, child, reason, actor.RestartDirective)
	if d := s.backoff(n); d > 0 {
		s.after(d, func() { sup.RestartChildren(targets...) })
		return
	}
	sup.RestartChildren(targets...)
}

// backoff returns the delay before restart number n (1-based) in the window.
func (s *strategy) backoff(n int) time.Duration {
	d := s.cfg.Backoff
	if d <= 0 {
		return 0
	}
	for i := 1; i < n; i++ {
		if s.cfg.MaxBackoff > 0 && d >= s.cfg.MaxBackoff {
			break
		}
		if d > math.MaxInt64/2 {
			break
		}
		d *= 2
	}
	if s.cfg.MaxBackoff > 0 && d > s.cfg.MaxBackoff {
		d = s.cfg.MaxBackoff
	}
	return d
}

func (s *strategy) publish(system *actor.ActorSystem, child *actor.PID, reason any, d actor.Directive) {
	system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: d})
}
