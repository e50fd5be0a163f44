package routemesh

import (
	"context"
	"sync"

	"github.com/zlink-go/zlink/mailbox"
)

// handlerPool runs one owner's handlers on long-lived worker goroutines, at
// most limit at once (the owner's handler concurrency). It is shared by
// every incarnation of the owner, like its hung tracker. A small leaf
// structure: mu guards only the counts, the idle list and the queue.
//
// While fewer than limit handlers run, the owner hands a message to an idle
// worker (or starts one). While all run, it queues the message here, up to
// limit of them, keeping the message's mailbox budget (see inbound.kept):
// a queued message still counts as queued against the owner's budgets, so
// admission is what it would be with the message still in the mailbox. A
// worker that finishes takes the next queued message at once (no goroutine
// parks or starts, and the owner is not woken per message); the owner
// waits only while the queue is full, until it is half empty. Workers are
// started while fewer than limit run, and the hung-check sweep retires
// those idle for a whole sweep interval, so an idle owner keeps no
// goroutines; the node's end retires the rest.
type handlerPool struct {
	limit int
	track *hungTracker // the workers' run slots

	mu      sync.Mutex
	closed  bool          // the node has ended: workers exit instead of parking
	busy    int           // workers running a handler (≤ limit)
	workers int           // workers alive: busy, idle, or starting
	started int           // workers started so far (each one's counters shard)
	idle    []*poolWorker // parked workers, the longest idle first
	gen     uint64        // sweeps so far (see trim)
	queue   []poolJob     // ring of limit: messages waiting for a worker
	qhead   int
	qlen    int
	waiting bool          // the owner waits for room (or a free worker)
	room    chan struct{} // buffered 1: wakes the waiting owner
}

// poolJob is one admitted message and the owner incarnation that took it.
type poolJob struct {
	o *ownerActor
	m *inbound
	q *mailbox.Quota // the budget m keeps while queued; nil = the mailbox's
}

// poolWorker is one parked worker's wake-up: a job, or a zero job to exit.
type poolWorker struct {
	wake chan poolJob // buffered 1
	gen  uint64       // the pool's gen when it parked
	slot runSlot      // what it runs (registered in the pool's tracker)
}

// newHandlerPool returns a pool whose workers all leave once ctx (the
// node's life) ends.
func newHandlerPool(ctx context.Context, limit int) *handlerPool {
	p := &handlerPool{limit: limit, track: newHungTracker(), queue: make([]poolJob, limit), room: make(chan struct{}, 1)}
	context.AfterFunc(ctx, p.close)
	return p
}

// submit hands j to a worker: an idle one, or a new one while fewer than
// limit run. With all busy it queues j when j carries its quota (j.q) and
// the queue has room; otherwise it waits (the owner takes no further
// message meanwhile, so the rest wait in its mailbox). It reports false,
// with j neither run nor queued, when done closes first.
func (p *handlerPool) submit(j poolJob, done <-chan struct{}) bool {
	for {
		p.mu.Lock()
		if p.busy < p.limit && p.qlen == 0 {
			j.q = nil // run now: the mailbox keeps (and releases) the budget
			p.busy++
			if k := len(p.idle); k > 0 {
				w := p.idle[k-1]
				p.idle[k-1] = nil
				p.idle = p.idle[:k-1]
				p.mu.Unlock()
				w.wake <- j
				return true
			}
			p.workers++
			w := &poolWorker{wake: make(chan poolJob, 1)}
			w.slot.shard = p.started % statShards
			p.started++
			p.mu.Unlock()
			go p.work(w, j)
			return true
		}
		if j.q != nil && p.qlen < len(p.queue) {
			j.m.kept = true // the mailbox leaves its budget to us
			p.queue[(p.qhead+p.qlen)%len(p.queue)] = j
			p.qlen++
			p.mu.Unlock()
			return true
		}
		p.waiting = true
		p.mu.Unlock()
		select {
		case <-p.room:
		case <-done:
			p.mu.Lock()
			p.waiting = false
			p.mu.Unlock()
			return false
		}
	}
}

// work runs jobs until the worker is retired or the node has ended.
func (p *handlerPool) work(w *poolWorker, j poolJob) {
	p.track.add(&w.slot)
	defer p.track.remove(&w.slot)
	for {
		p.run(w, j)
		p.mu.Lock()
		if p.qlen > 0 {
			j = p.queue[p.qhead]
			p.queue[p.qhead] = poolJob{}
			p.qhead = (p.qhead + 1) % len(p.queue)
			p.qlen--
			wake := p.waiting && p.qlen <= len(p.queue)/2
			p.mu.Unlock()
			if wake {
				p.wakeOwner()
			}
			continue
		}
		p.busy--
		wake := p.waiting
		if p.closed {
			p.workers--
			p.mu.Unlock()
			if wake {
				p.wakeOwner()
			}
			return
		}
		w.gen = p.gen
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		if wake {
			p.wakeOwner()
		}
		if j = <-w.wake; j.m == nil {
			return // retired by trim or close
		}
	}
}

// run runs one job. A queued one first gives back the budget it kept, and
// is refused instead when the node has begun to stop meanwhile (as the
// owner refuses what it takes from its mailbox then).
func (p *handlerPool) run(w *poolWorker, j poolJob) {
	if j.q != nil {
		j.q.Release(int64(j.m.Size()))
		if j.o.n.hctx != nil && j.o.n.hctx.Err() != nil {
			j.o.stopping(j.m)
			return
		}
	}
	j.o.handle(j.m, &w.slot)
}

// wakeOwner wakes the owner waiting in submit (p.waiting was set).
func (p *handlerPool) wakeOwner() {
	p.mu.Lock()
	p.waiting = false
	p.mu.Unlock()
	select {
	case p.room <- struct{}{}:
	default:
	}
}

// close retires every idle worker, and every busy one once it finishes.
func (p *handlerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.retireOldest(len(p.idle))
}

// retireOldest retires the k longest idle workers (p.mu held).
func (p *handlerPool) retireOldest(k int) {
	for _, w := range p.idle[:k] {
		w.wake <- poolJob{}
	}
	n := copy(p.idle, p.idle[k:])
	clear(p.idle[n:])
	p.idle = p.idle[:n]
	p.workers -= k
}

// trim retires the workers that have been idle since the previous trim
// (the hung-check sweep calls it once per interval).
func (p *handlerPool) trim() {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for k < len(p.idle) && p.idle[k].gen < p.gen {
		k++
	}
	p.retireOldest(k)
	p.gen++
}

// running counts the workers running a handler.
func (p *handlerPool) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy
}
