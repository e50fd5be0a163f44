package actors

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Pool is an elastic pooled dispatcher: a protoactor actor.Dispatcher
// that runs each scheduled mailbox on a worker goroutine kept from an
// earlier schedule when one is parked, and on a new goroutine otherwise —
// never queued behind a busy worker, so a turn that blocks holds back
// nothing but its own actor. A worker that ran its mailbox parks for the
// next one; it exits when MaxIdle workers are parked already, when it
// stayed parked through a whole Idle period, or when the Pool is closed.
//
// Against protoactor's default dispatcher (a new goroutine per schedule)
// it saves the goroutine's start and, more, the stack growth an actor's
// turn makes on a fresh stack: a parked worker keeps its grown stack. It
// is for actors scheduled very often with little to do per schedule
// (Spots running timer firings), whose schedules come in bursts: a burst
// finds as many parked workers as the last one left, up to MaxIdle.
type Pool struct {
	throughput int
	maxIdle    int32
	idleFor    time.Duration

	work    chan func() // unbuffered: a send succeeds only into a parked worker
	quit    chan struct{}
	closed  atomic.Bool
	idle    atomic.Int32 // workers parked on work
	low     atomic.Int32 // the fewest parked since the janitor's last tick
	workers atomic.Int32 // workers alive
	janitor atomic.Bool  // the janitor goroutine runs
}

var _ actor.Dispatcher = (*Pool)(nil)

// PoolConfig configures a Pool; zero fields take the defaults.
type PoolConfig struct {
	// Throughput is how many messages a mailbox runs before it yields the
	// processor (protoactor's Dispatcher.Throughput). Default 300, as
	// protoactor's default dispatcher.
	Throughput int
	// MaxIdle bounds the parked workers. Default 1024.
	MaxIdle int
	// Idle is how long a worker may stay parked: every Idle period the
	// workers that were parked throughout it exit. Default 1 s.
	Idle time.Duration
}

// NewPool returns a Pool; Close it when its actors are gone.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Throughput <= 0 {
		cfg.Throughput = 300
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = 1024
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Second
	}
	return &Pool{
		throughput: cfg.Throughput,
		maxIdle:    int32(cfg.MaxIdle),
		idleFor:    cfg.Idle,
		work:       make(chan func()),
		quit:       make(chan struct{}),
	}
}

// Schedule runs fn on a parked worker, or on a new one when none is
// parked (or the Pool is closed: then fn runs on a goroutine of its own).
func (p *Pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
		return
	default:
	}
	if p.closed.Load() {
		go fn()
		return
	}
	p.workers.Add(1)
	go p.worker(fn)
	if !p.janitor.Load() && p.janitor.CompareAndSwap(false, true) {
		go p.trim()
	}
}

// Throughput implements actor.Dispatcher.
func (p *Pool) Throughput() int { return p.throughput }

// Workers reports the worker goroutines alive: running a mailbox or
// parked.
func (p *Pool) Workers() int { return int(p.workers.Load()) }

// Close makes every parked worker exit, and every busy one once its
// mailbox is done; later schedules run on goroutines of their own. It is
// idempotent.
func (p *Pool) Close() {
	if p.closed.CompareAndSwap(false, true) {
		close(p.quit)
	}
}

// worker runs fn, then parks for the next mailbox; a nil fn from the
// janitor ends it.
func (p *Pool) worker(fn func()) {
	defer p.workers.Add(-1)
	fn()
	for {
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
			n := p.idle.Add(-1)
			for l := p.low.Load(); n < l && !p.low.CompareAndSwap(l, n); l = p.low.Load() {
			}
			if fn == nil {
				return
			}
			fn()
		case <-p.quit:
			p.idle.Add(-1)
			return
		}
	}
}

// trim is the janitor: every Idle period it ends as many parked workers
// as stayed parked throughout the period. It runs while the Pool has
// workers (Schedule starts it again).
func (p *Pool) trim() {
	t := time.NewTicker(p.idleFor)
	defer t.Stop()
	p.low.Store(p.idle.Load())
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		for n := p.low.Swap(p.idle.Load()); n > 0; n-- {
			select {
			case p.work <- nil:
			default:
				n = 0
			}
		}
		if p.workers.Load() == 0 {
			p.janitor.Store(false)
			// A worker started since is the janitor's to trim unless its
			// Schedule started another janitor.
			if p.workers.Load() == 0 || !p.janitor.CompareAndSwap(false, true) {
				return
			}
		}
	}
}
