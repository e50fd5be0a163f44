package pasupervisor

import (
	"errors"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/supervisor"
)

// PathOf returns the registry path of a local protoactor PID: "/" + its id.
// protoactor names a child "<parent id>/<name>", so this is the parent's
// path + "/" + the child's name.
func PathOf(pid *actor.PID) string {
	if pid == nil {
		return supervisor.RootPath
	}
	return supervisor.RootPath + pid.Id
}

// Strategy returns the protoactor SupervisorStrategy for c, recording
// failures, restarts and states in reg. It panics on an invalid Config (a
// programming error). Use it as the props supervisor of an actor that has a
// parent actor to escalate to.
func Strategy(c supervisor.Config, reg *supervisor.Registry) actor.SupervisorStrategy {
	return newStrategy(c, reg, false)
}

// RootStrategy is Strategy for actors whose supervisor is protoactor's
// guardian (top-level actors): always one-for-one, and past the restart
// intensity the child is stopped, since there is no parent to escalate to.
func RootStrategy(c supervisor.Config, reg *supervisor.Registry) actor.SupervisorStrategy {
	return newStrategy(c, reg, true)
}

func newStrategy(c supervisor.Config, reg *supervisor.Registry, root bool) *strategy {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		panic(err)
	}
	if root {
		c.Kind = supervisor.OneForOne
	}
	return &strategy{cfg: c, reg: reg, root: root, after: afterFunc}
}

func afterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// strategy implements actor.SupervisorStrategy. HandleFailure runs on the
// supervisor's mailbox goroutine (or the child's, for the guardian); it
// never blocks: backoff restarts are scheduled with a timer.
type strategy struct {
	cfg   supervisor.Config
	reg   *supervisor.Registry
	root  bool
	after func(time.Duration, func()) // time.AfterFunc; replaced in tests
}

var _ actor.SupervisorStrategy = (*strategy)(nil)

func (s *strategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason, message any,
) {
	path := PathOf(child)
	s.reg.Failed(path, reason, "")

	if err, ok := reason.(error); ok && errors.Is(err, supervisor.ErrUnrecoverable) {
		s.publish(system, child, reason, actor.StopDirective)
		s.reg.SetState(path, supervisor.Failed)
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
			s.reg.SetState(path, supervisor.Failed)
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
	if s.cfg.Kind == supervisor.AllForOne {
		targets = sup.Children()
	}
	for _, t := range targets {
		p := PathOf(t)
		s.reg.SetState(p, supervisor.Restarting)
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
