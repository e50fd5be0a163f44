package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/internal/pamailbox"
)

// pool is an elastic pooled dispatcher: a protoactor actor.Dispatcher
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
//
// Parked workers wait on channels of their own, in a stack: a schedule
// takes the one parked last (its stack is the likeliest to be in cache)
// and the janitor retires the ones parked longest. One channel shared by
// every worker was a contended lock on two cores.
type pool struct {
	throughput int
	maxIdle    int
	idleFor    time.Duration

	mu     sync.Mutex
	parked []*poolWorker // a stack: the last parked on top
	low    int           // the fewest parked since the janitor's last tick
	closed bool
	trims  bool // the janitor goroutine runs

	workers atomic.Int32 // workers alive
	quit    chan struct{}
}

// poolWorker is one parked worker's mailbox slot.
type poolWorker struct {
	next chan poolTask // cap 1: the schedule it is handed, the zero task to exit
}

// poolTask is one schedule: a func, or a mailbox's run (no func value).
type poolTask struct {
	fn func()
	mb pamailbox.Task
}

func (t poolTask) run() {
	if t.mb != nil {
		pamailbox.RunTask(t.mb)
		return
	}
	t.fn()
}

var (
	_ actor.Dispatcher         = (*pool)(nil)
	_ pamailbox.TaskDispatcher = (*pool)(nil)
)

// poolConfig configures a pool; zero fields take the defaults.
type poolConfig struct {
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

// newPool returns a pool; Close it when its actors are gone.
func newPool(cfg poolConfig) *pool {
	if cfg.Throughput <= 0 {
		cfg.Throughput = 300
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = 1024
	}
	if cfg.Idle <= 0 {
		cfg.Idle = time.Second
	}
	return &pool{
		throughput: cfg.Throughput,
		maxIdle:    cfg.MaxIdle,
		idleFor:    cfg.Idle,
		quit:       make(chan struct{}),
	}
}

// Schedule runs fn on the worker parked last, or on a new one when none
// is parked (or the Pool is closed: then fn runs on a goroutine of its
// own).
func (p *pool) Schedule(fn func()) { p.schedule(poolTask{fn: fn}) }

// ScheduleTask is Schedule for a mailbox's run (pamailbox.TaskDispatcher).
func (p *pool) ScheduleTask(t pamailbox.Task) { p.schedule(poolTask{mb: t}) }

func (p *pool) schedule(task poolTask) {
	p.mu.Lock()
	if n := len(p.parked); n > 0 {
		w := p.parked[n-1]
		p.parked[n-1] = nil
		p.parked = p.parked[:n-1]
		p.low = min(p.low, n-1)
		p.mu.Unlock()
		w.next <- task // cap 1, and nobody else sends to a worker taken off the stack
		return
	}
	closed := p.closed
	trim := !closed && !p.trims
	if trim {
		p.trims = true
	}
	if !closed {
		p.workers.Add(1) // under mu: a janitor deciding to end sees it
	}
	p.mu.Unlock()
	if closed {
		go task.run()
		return
	}
	go p.worker(task)
	if trim {
		go p.trim()
	}
}

// Throughput implements actor.Dispatcher.
func (p *pool) Throughput() int { return p.throughput }

// Workers reports the worker goroutines alive: running a mailbox or
// parked.
func (p *pool) Workers() int { return int(p.workers.Load()) }

// Close makes every parked worker exit, and every busy one once its
// mailbox is done; later schedules run on goroutines of their own. It is
// idempotent.
func (p *pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	parked := p.parked
	p.parked = nil
	p.mu.Unlock()
	close(p.quit)
	for _, w := range parked {
		w.next <- poolTask{}
	}
}

// worker runs task, then parks for the next mailbox; the zero task
// (the janitor, Close) ends it.
func (p *pool) worker(task poolTask) {
	defer p.workers.Add(-1)
	w := &poolWorker{next: make(chan poolTask, 1)}
	for task.fn != nil || task.mb != nil {
		task.run()
		p.mu.Lock()
		if p.closed || len(p.parked) >= p.maxIdle {
			p.mu.Unlock()
			return
		}
		p.parked = append(p.parked, w)
		p.mu.Unlock()
		task = <-w.next
	}
}

// trim is the janitor: every Idle period it ends as many parked workers
// as stayed parked throughout the period, the ones parked longest. It
// runs while the Pool has workers (Schedule starts it again).
func (p *pool) trim() {
	t := time.NewTicker(p.idleFor)
	defer t.Stop()
	p.mu.Lock()
	p.low = len(p.parked)
	p.mu.Unlock()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		p.mu.Lock()
		n := min(p.low, len(p.parked))
		retire := append([]*poolWorker(nil), p.parked[:n]...)
		m := copy(p.parked, p.parked[n:])
		clear(p.parked[m:])
		p.parked = p.parked[:m]
		p.low = m
		p.mu.Unlock()
		for _, w := range retire {
			w.next <- poolTask{}
		}
		if p.workers.Load() == 0 {
			p.mu.Lock()
			// A worker started since is this janitor's to trim unless its
			// Schedule saw the janitor gone.
			done := p.workers.Load() == 0
			if done {
				p.trims = false
			}
			p.mu.Unlock()
			if done {
				return
			}
		}
	}
}
