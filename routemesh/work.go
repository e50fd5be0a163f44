package routemesh

import (
	"context"
	"sync"
	"sync/atomic"
)

// workCount counts the inbound work this node admitted and has not
// finished (queued in an owner or running in a handler), and wakes every
// waiter when it drops to zero: Drain and Stop wait on it instead of
// polling. A leaf structure: mu guards only the wake channel.
type workCount struct {
	n    atomic.Int64
	mu   sync.Mutex
	wake chan struct{} // closed and replaced each time the count reaches zero
}

func (w *workCount) init() { w.wake = make(chan struct{}) }

func (w *workCount) add() { w.n.Add(1) }

func (w *workCount) done() {
	if w.n.Add(-1) == 0 {
		w.mu.Lock()
		close(w.wake)
		w.wake = make(chan struct{})
		w.mu.Unlock()
	}
}

func (w *workCount) load() int64 { return w.n.Load() }

// wait returns nil once no admitted work is left, or ctx's error.
func (w *workCount) wait(ctx context.Context) error {
	for {
		w.mu.Lock()
		wake := w.wake
		w.mu.Unlock()
		if w.n.Load() <= 0 {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
