package actors

import "log/slog"

// ProtoLogger is the slog logger of s's protoactor system, for the test
// that checks protoactor's output reaches zerolog. Test-only: the raw
// protoactor system is not part of the public API.
func ProtoLogger(s *System) *slog.Logger { return s.as.Logger() }

// PIDID is the protoactor PID id of r's actor, for the tests that check
// the tree's paths follow protoactor's names.
func PIDID(r *Ref) string {
	if r.pid == nil {
		return ""
	}
	return r.pid.Id
}

// StopChildrenNow stops every child of c's actor at once (a system
// message, ahead of what they still have queued), for the test that a
// stopped actor's queued messages reach MessageDropped.
func StopChildrenNow(c *Context) {
	for _, ch := range c.pc.Children() {
		c.pc.Stop(ch)
	}
}

// Pool, NewPool and PoolConfig are the System's pooled dispatcher, for its
// tests and benchmarks (not public API: actors use it through
// Spec.Pooled).
type (
	Pool       = pool
	PoolConfig = poolConfig
)

// NewPool makes a pooled dispatcher.
func NewPool(cfg PoolConfig) *Pool { return newPool(cfg) }
