package routemesh

import (
	"context"
	"sync"
)

// handlerPool runs one owner's handlers on long-lived worker goroutines, at
// most limit at once (the owner's handler concurrency). It is shared by
// every incarnation of the owner, like its hung tracker. A small leaf
// structure: mu guards only the counts, the idle list and the hand-over.
//
// A worker that finishes a handler takes the owner's next message at once
// when the owner is waiting for a free worker (no goroutine parks or
// starts); otherwise it parks on the idle list until the owner hands it
// work. Workers are started while fewer than limit run, and the hung-check
// sweep retires those idle for a whole sweep interval, so an idle owner
// keeps no goroutines; the node's end retires the rest.
type handlerPool struct {
	limit int

	mu      sync.Mutex
	closed  bool          // the node has ended: workers exit instead of parking
	busy    int           // workers running a handler (≤ limit)
	workers int           // workers alive: busy, idle, or starting
	idle    []*poolWorker // parked workers, the longest idle first
	gen     uint64        // sweeps so far (see trim)
	next    poolJob       // the owner's message waiting for a worker (m nil = none)
	taken   chan struct{} // buffered 1: a worker took next
}

// poolJob is one admitted message and the owner incarnation that took it.
type poolJob struct {
	o *ownerActor
	m *inbound
}

// poolWorker is one parked worker's wake-up: a job, or a zero job to exit.
type poolWorker struct {
	wake chan poolJob // buffered 1
	gen  uint64       // the pool's gen when it parked
}

// newHandlerPool returns a pool whose workers all leave once ctx (the
// node's life) ends.
func newHandlerPool(ctx context.Context, limit int) *handlerPool {
	p := &handlerPool{limit: limit, taken: make(chan struct{}, 1)}
	context.AfterFunc(ctx, p.close)
	return p
}

// submit hands j to a worker: an idle one, a new one while fewer than
// limit run, or else the first one to finish, waiting for it (the owner
// takes no further message meanwhile, so the rest wait in its mailbox).
// It reports false, with j not run, when done closes first.
func (p *handlerPool) submit(j poolJob, done <-chan struct{}) bool {
	p.mu.Lock()
	if p.busy < p.limit {
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
		p.mu.Unlock()
		go p.work(&poolWorker{wake: make(chan poolJob, 1)}, j)
		return true
	}
	p.next = j
	p.mu.Unlock()
	select {
	case <-p.taken:
		return true
	case <-done:
	}
	p.mu.Lock()
	if p.next.m == j.m {
		p.next = poolJob{}
		p.mu.Unlock()
		return false
	}
	p.mu.Unlock()
	<-p.taken // a worker took it meanwhile
	return true
}

// work runs jobs until the worker is retired or the node has ended.
func (p *handlerPool) work(w *poolWorker, j poolJob) {
	for {
		j.o.handle(j.m)
		p.mu.Lock()
		if p.next.m != nil {
			j, p.next = p.next, poolJob{}
			p.mu.Unlock()
			p.taken <- struct{}{}
			continue
		}
		p.busy--
		if p.closed {
			p.workers--
			p.mu.Unlock()
			return
		}
		w.gen = p.gen
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		if j = <-w.wake; j.m == nil {
			return // retired by trim or close
		}
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
