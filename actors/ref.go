package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/internal/pamailbox"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/supervisor"
)

// Ref is a handle to a spawned actor. It is safe for concurrent use; pass
// the pointer around freely.
type Ref struct {
	sys *System
	// fold: this actor's children are counted, not registered (Spec.Fold);
	// folded: this actor is such a child.
	fold, folded bool
	pid          *actor.PID
	path         string
	q            *mailbox.Quota
	mb           *pamailbox.Mailbox
	life         *lifecycle
}

// lifecycle is shared by a Ref and every incarnation of its actor.
//
// mu orders Tell/Request against Stop: senders hold it for reading while
// they check closed, admit and post; Stop takes it for writing to set closed
// before it posts the PoisonPill, so every admitted message is queued ahead
// of the PoisonPill and is processed before the actor stops.
type lifecycle struct {
	mu     sync.RWMutex
	closed bool // Stop was called; guarded by mu

	dead atomic.Bool // the actor is stopping or stopped on its own
	// done is made on first use (most actors — every Spot — are never
	// waited for) and closed by finish; guarded by mu.
	done     chan struct{}
	finished bool
}

func newLifecycle() *lifecycle { return &lifecycle{} }

func (l *lifecycle) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return
	}
	l.finished = true
	if l.done != nil {
		close(l.done)
	}
}

// doneCh returns the channel closed when the actor has stopped for good.
func (l *lifecycle) doneCh() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.finished {
			close(l.done)
		}
	}
	return l.done
}

// Path returns the registry path, e.g. "/host/mesh:game/peers".
func (r *Ref) Path() string { return r.path }

// Quota returns the actor's mailbox quota.
func (r *Ref) Quota() *mailbox.Quota { return r.q }

// Done is closed once the actor has stopped.
func (r *Ref) Done() <-chan struct{} { return r.life.doneCh() }

// sizeOf is the byte size a local message is admitted with: its Size() if it
// declares one, len for []byte, else 0.
func sizeOf(msg any) int64 {
	switch m := msg.(type) {
	case interface{ Size() int }:
		return int64(m.Size())
	case []byte:
		return int64(len(m))
	}
	return 0
}

// Tell posts msg to the actor without waiting. It fails fast with a
// *mailbox.FullError (matching mailbox.ErrMailboxFull) when a budget is
// spent, and with ErrStopped once the actor stops or is stopping. It never
// blocks on a full mailbox.
func (r *Ref) Tell(msg any) error {
	size := sizeOf(msg)
	r.life.mu.RLock()
	defer r.life.mu.RUnlock()
	if r.life.closed || r.life.dead.Load() {
		return ErrStopped
	}
	if err := r.q.Admit(size); err != nil {
		return err
	}
	r.mb.PostSized(msg, size)
	return nil
}

// TellControl posts a control message (a peer lost, a descriptor change,
// drain, stop, a timer of the actor's own): it is never refused for want
// of budget — the budgets bound application traffic, and control messages
// are bounded by construction (one per event the actor waits for) — yet it
// counts in the mailbox's depth. It fails only with ErrStopped.
func (r *Ref) TellControl(msg any) error {
	r.life.mu.RLock()
	defer r.life.mu.RUnlock()
	if r.life.closed || r.life.dead.Load() {
		return ErrStopped
	}
	r.mb.PostUserMessage(msg)
	return nil
}

// RequestControl is Request for a control message: never refused for
// want of budget (see TellControl).
func (r *Ref) RequestControl(ctx context.Context, msg any) (any, error) {
	return r.request(ctx, msg, false)
}

// replyProcess is a one-shot protoactor Process that receives the reply of
// one Request. It is registered in the process registry only while the
// request is pending.
type replyProcess struct{ ch chan any }

var _ actor.Process = (*replyProcess)(nil)

func (p *replyProcess) SendUserMessage(_ *actor.PID, m any) {
	if env, ok := m.(*actor.MessageEnvelope); ok {
		m = env.Message
	}
	select {
	case p.ch <- m:
	default: // a second reply to the same request is dropped
	}
}

func (p *replyProcess) SendSystemMessage(*actor.PID, any) {}
func (p *replyProcess) Stop(*actor.PID)                   {}

// Request posts msg with a reply address and waits for the actor's
// c.Respond(x). It ends with x, the admission error (*mailbox.FullError),
// ErrStopped, ErrTimeout (also matching context.DeadlineExceeded) when ctx's
// deadline passes, or context.Canceled.
func (r *Ref) Request(ctx context.Context, msg any) (any, error) {
	return r.request(ctx, msg, true)
}

func (r *Ref) request(ctx context.Context, msg any, budgeted bool) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(err)
	}
	size := sizeOf(msg)
	r.life.mu.RLock()
	if r.life.closed || r.life.dead.Load() {
		r.life.mu.RUnlock()
		return nil, ErrStopped
	}
	if budgeted {
		if err := r.q.Admit(size); err != nil {
			r.life.mu.RUnlock()
			return nil, err
		}
	}
	reg := r.sys.as.ProcessRegistry
	rp := &replyProcess{ch: make(chan any, 1)}
	pid, _ := reg.Add(rp, "reply"+reg.NextId())
	if budgeted {
		r.mb.PostSized(&actor.MessageEnvelope{Message: msg, Sender: pid}, size)
	} else {
		r.mb.PostUserMessage(&actor.MessageEnvelope{Message: msg, Sender: pid})
	}
	r.life.mu.RUnlock()
	defer reg.Remove(pid)

	select {
	case v := <-rp.ch:
		return replyOf(v)
	case <-r.life.doneCh():
		select {
		case v := <-rp.ch:
			return replyOf(v)
		default:
			return nil, ErrStopped
		}
	case <-ctx.Done():
		return nil, ctxErr(ctx.Err())
	}
}

// replyOf turns the failure marker into ErrFailed.
func replyOf(v any) (any, error) {
	if _, ok := v.(*failedReply); ok {
		return nil, ErrFailed
	}
	return v, nil
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// Stop stops the actor gracefully: from the moment it is called Tell and
// Request fail with ErrStopped; everything admitted before is processed;
// then the actor stops (protoactor PoisonPill semantics: its children are
// stopped too). It waits until the actor has stopped or ctx ends. It is
// idempotent.
func (r *Ref) Stop(ctx context.Context) error {
	r.poison()
	return r.wait(ctx)
}

func (r *Ref) poison() {
	r.life.mu.Lock()
	already := r.life.closed
	r.life.closed = true
	r.life.mu.Unlock()
	if !already && !r.life.dead.Load() {
		r.sys.as.Root.Poison(r.pid)
	}
}

func (r *Ref) wait(ctx context.Context) error {
	select {
	case <-r.life.doneCh():
		return nil
	case <-ctx.Done():
		return ctxErr(ctx.Err())
	}
}

// cell is an actor's Context as protoactor sees it (the same memory,
// another method set): it keeps the registry state and the Ref's lifecycle
// in step with protoactor's lifecycle messages and serves spawn requests
// from Spawn(Spec{Parent: ...}). It adds no allocation per message and
// no memory per actor: the user's actor gets the cell itself as its
// *Context.
type cell Context

func newCell(ref *Ref, inner Actor) *cell {
	return &cell{ref: ref, inner: inner}
}

// failed answers the message that panicked (if any): a Request's caller
// gets ErrFailed, and the inner actor's MessageFailed sees it.
func (c *cell) failed(ctx actor.Context) {
	m, sender := c.current, c.sender
	c.current, c.sender = nil, nil
	if m == nil {
		return
	}
	if sender != nil {
		ctx.Send(sender, &failedReply{})
	}
	if fh, ok := c.inner.(FailureHandler); ok {
		fh.MessageFailed(m)
	}
}

// dropped hands every admitted message the stopped actor never handled to
// its MessageDropped; a Request's caller ends with ErrStopped on its own.
func (c *cell) dropped() {
	fh, _ := c.inner.(FailureHandler)
	c.ref.mb.DrainUser(func(msg any) {
		if env, ok := msg.(*actor.MessageEnvelope); ok {
			msg = env.Message
		}
		if fh != nil {
			fh.MessageDropped(msg)
		}
	})
}

func (c *cell) Receive(ctx actor.Context) {
	c.pc = ctx
	sys := c.ref.sys
	reg := sys.reg
	switch m := ctx.Message().(type) {
	case *actor.Started:
		reg.SetState(c.ref.path, supervisor.Running)
	case *actor.Restarting:
		reg.SetState(c.ref.path, supervisor.Restarting)
		c.failed(ctx)
	case *actor.Stopping:
		// Under the write lock: no Tell is between its check and its post
		// once this returns, so DrainUser at Stopped sees every message.
		c.ref.life.mu.Lock()
		c.ref.life.dead.Store(true)
		c.ref.life.mu.Unlock()
		reg.SetState(c.ref.path, supervisor.Stopping)
		c.failed(ctx)
	case *actor.Stopped:
		c.ref.life.dead.Store(true)
		reg.SetState(c.ref.path, supervisor.Stopped)
		defer c.ref.life.finish()
		defer sys.forget(c.ref)
		c.inner.Receive((*Context)(c))
		c.dropped()
		return
	case *actor.Terminated:
		// A child stopped: protoactor's own bookkeeping, nothing the
		// actor handles.
		return
	case *spawnRequest:
		ref, err := sys.spawn(ctx, c.ref.path, m.spec)
		m.reply <- spawnResult{ref: ref, err: err}
		return
	case *injectedPanic:
		panic(m.reason)
	default:
		c.current, c.sender = m, ctx.Sender()
		c.inner.Receive((*Context)(c))
		c.current, c.sender = nil, nil
		return
	}
	c.inner.Receive((*Context)(c))
}
