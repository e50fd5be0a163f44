package spot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh"
)

// reentry keeps a reentrant kind's Spot to one turn at a time while its
// turns wait on calls of their own (a leaf structure; its mutex guards only
// these fields).
//
// The turns of an activation form a stack: the actor's turn at the bottom,
// and above it each reentrant turn, run by a goroutine of the turn below
// while that goroutine is blocked in an outbound call made with its
// *Context. A delivery of a chain the activation waits on is queued here
// (admitted against the Spot's mailbox budgets); only a goroutine of the
// top turn that is blocked in a call takes it, and taking it pushes a new
// turn, so every other goroutine waits: the state is touched by one turn
// at a time, and turns interleave only where the running turn called out
// (the way Orleans interleaves a reentrant grain only at await points).
// What is still queued when the bottom turn ends runs right after it, in
// the actor, in arrival order.
type reentry struct {
	mu    sync.Mutex
	queue []*delivery
	stack []uint64 // running turns, innermost last
	next  uint64
	wake  chan struct{} // closed and replaced when the queue or the stack changes
	// run runs one delivery as a turn of the Spot (its state, its
	// persistence rules); set by the Spot's actor each time it starts.
	run func(d *delivery, turn uint64)
}

func (r *reentry) setRun(run func(d *delivery, turn uint64)) {
	r.mu.Lock()
	r.run = run
	r.mu.Unlock()
}

// reset empties the stack after the actor's turn panicked and returns
// what was queued.
func (r *reentry) reset() []*delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stack = nil
	r.signalLocked()
	left := r.queue
	r.queue = nil
	return left
}

// enter pushes a turn and returns its number.
func (r *reentry) enter() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.stack = append(r.stack, r.next)
	return r.next
}

// leave pops turn t (the innermost). When it was the bottom turn it
// returns what is still queued: the actor runs those next.
func (r *reentry) leave(t uint64) []*delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.stack); n == 0 || r.stack[n-1] != t {
		panic(fmt.Sprintf("spot: reentrant turn %d left out of order (stack %v)", t, r.stack))
	}
	r.stack = r.stack[:len(r.stack)-1]
	r.signalLocked()
	if len(r.stack) > 0 {
		return nil
	}
	left := r.queue
	r.queue = nil
	return left
}

// offer queues d for the running turns. It reports false when no turn runs
// (the call that made d reentrant was made by a goroutine that outlived
// its turn): d is then an ordinary message of the Spot.
func (r *reentry) offer(d *delivery) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.stack) == 0 {
		return false
	}
	r.queue = append(r.queue, d)
	r.signalLocked()
	return true
}

// take gives the next queued delivery to a goroutine of turn t blocked in
// a call, when t is the innermost turn, and pushes the turn that runs it.
// Otherwise it returns the channel to wait on for a change.
func (r *reentry) take(t uint64) (*delivery, uint64, func(*delivery, uint64), <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.stack); n > 0 && r.stack[n-1] == t && len(r.queue) > 0 {
		d := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.next++
		r.stack = append(r.stack, r.next)
		return d, r.next, r.run, nil
	}
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return nil, 0, nil, r.wake
}

func (r *reentry) signalLocked() {
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// reenter queues a delivery of a chain act is waiting on (a reentrant
// kind), admitted against the Spot's mailbox budgets; a refusal ends it
// with ErrBusy, as a full mailbox does. When no turn of act runs any more
// it goes to the mailbox like any other message.
func (rt *runtime) reenter(ks *kindState, act *activation, d *delivery) {
	q := act.ref.Quota()
	size := int64(d.Size())
	if err := q.Admit(size); err != nil {
		rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: %w", zerr.ErrBusy, ks.reg.name, act.id, err)))
		return
	}
	d.admitted = size
	if act.re.offer(d) {
		return
	}
	q.Release(size)
	d.admitted = 0
	if err := act.ref.Tell(d); err != nil {
		rt.toKind(ks, d)
	}
}

// awaitCall waits for one outbound call of the turn c (a reentrant kind),
// running the reentrant deliveries that c's turn may take meanwhile, one
// at a time. start begins the call; its result arrives through the
// function it is given (exactly once, on any goroutine). The call ends
// early with ctx's error.
func awaitCall(ctx context.Context, c *Context, start func(func(routemesh.Reply))) ([]byte, error) {
	done := make(chan routemesh.Reply, 1)
	start(func(r routemesh.Reply) { done <- r })
	for {
		wake := c.serveReentry()
		select {
		case r := <-done:
			return r.Payload, r.Err
		case <-ctx.Done():
			return nil, ctxError(ctx)
		case <-wake:
		}
	}
}

// serveReentry runs, one after the other, the deliveries c's turn may take
// now, and returns the channel that tells of the next change.
func (c *Context) serveReentry() <-chan struct{} {
	re := c.act.re
	for {
		d, t, run, wake := re.take(c.turn)
		if d == nil {
			return wake
		}
		run(d, t)
		re.leave(t)
	}
}

// sleepServing is sleepCtx for a turn of a reentrant kind: it runs the
// deliveries the turn may take while it waits.
func sleepServing(ctx context.Context, c *Context, d time.Duration) error {
	if !c.reentrant() {
		return sleepCtx(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		wake := c.serveReentry()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctxError(ctx)
		case <-wake:
		}
	}
}

// reentrant reports whether c is a turn of a reentrant kind (its blocking
// Spot calls serve the deliveries of their own chains).
func (c *Context) reentrant() bool {
	return c != nil && c.act != nil && c.turn != 0 && c.ks.reg.reentrant
}

func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", zerr.ErrTimeout, ctx.Err())
	}
	return fmt.Errorf("%w: %w", zerr.ErrCancelled, ctx.Err())
}
