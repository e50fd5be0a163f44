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
//
// The count crosses zero on nearly every call of a lightly loaded node, and
// almost never with anyone waiting, so the wake channel exists only while a
// waiter needs it: a zero crossing without waiters allocates nothing and
// takes no lock.
type workCount struct {
	n       atomic.Int64
	waiters atomic.Int32 // goroutines inside wait
	mu      sync.Mutex
	wake    chan struct{} // made by a waiter; closed and cleared when the count reaches zero
}

func (w *workCount) init() {}

func (w *workCount) add() { w.n.Add(1) }

func (w *workCount) done() {
	// A waiter registers (waiters) before it reads the count; this side
	// drops the count before it reads waiters. So either the waiter sees
	// zero, or this side sees the waiter and closes the channel it made.
	if w.n.Add(-1) == 0 && w.waiters.Load() > 0 {
		w.mu.Lock()
		if w.wake != nil {
			close(w.wake)
			w.wake = nil
		}
		w.mu.Unlock()
	}
}

func (w *workCount) load() int64 { return w.n.Load() }

// wait returns nil once no admitted work is left, or ctx's error.
func (w *workCount) wait(ctx context.Context) error {
	w.waiters.Add(1)
	defer w.waiters.Add(-1)
	for {
		w.mu.Lock()
		if w.wake == nil {
			w.wake = make(chan struct{})
		}
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
