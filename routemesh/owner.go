package routemesh

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/wire"
)

// ownerActor owns one handler scope (the Node-direct scope of a MeshNode,
// or a channel) and runs its handlers. Its bounded mailbox is the
// admission: a full mailbox is ErrBusy to the caller, never a silent drop.
// Handlers run on up to the concurrency limit of its pool's workers at
// once; while all are busy the owner queues up to that many more in the
// pool and then stops taking messages, so they wait in the mailbox. Queued
// messages, in the mailbox or the pool, count against its budgets (queued ≤
// budget, running ≤ concurrency).
type ownerActor struct {
	n        *Node
	channel  string
	requests map[string]RequestHandler
	sends    map[string]SendHandler
	pool     *handlerPool   // shared across restarts: running handlers and their deadlines
	q        *mailbox.Quota // the owner's budgets (from Started)
	served   *servedStats   // shared across restarts: what it served
}

var _ actors.FailureHandler = (*ownerActor)(nil)

func (o *ownerActor) Receive(c *actors.Context) {
	m, ok := c.Message().(*inbound)
	if !ok {
		if _, ok := c.Message().(*actors.Started); ok {
			if ref := c.Self(); ref != nil {
				o.q = ref.Quota()
			}
		}
		return
	}
	// Hand it to a worker, or queue it in the pool with its budget. The
	// common cases (not stopping; a worker free or room in the queue) are
	// decided without blocking.
	done := o.n.hctx.Done()
	select {
	case <-done:
		o.stopping(m)
		return
	default:
	}
	if !o.pool.submit(poolJob{o: o, m: m, q: o.q}, done) {
		o.stopping(m)
	}
}

// stopping answers m instead of running it: the node is stopping.
func (o *ownerActor) stopping(m *inbound) {
	o.refuse(m, o.n.load().refusal(o.n))
}

// MessageFailed answers the message the owner panicked on (outside a
// handler: handlers recover their own panics) with ErrHandler.
func (o *ownerActor) MessageFailed(msg any) {
	if m, ok := msg.(*inbound); ok {
		o.refuse(m, fmt.Errorf("%w: the owner failed before running the handler", zerr.ErrHandler))
	}
}

// MessageDropped answers a message the owner admitted but never ran
// because it stopped: ErrShuttingDown while the node stops, else ErrBusy
// (it was not run; the owner is being rebuilt).
func (o *ownerActor) MessageDropped(msg any) {
	if m, ok := msg.(*inbound); ok {
		err := o.n.load().refusal(o.n)
		if err == nil {
			err = errOwnerRestarting
		}
		o.refuse(m, err)
	}
}

// refuse ends an admitted message without running it.
func (o *ownerActor) refuse(m *inbound, err error) {
	if err == nil {
		err = zerr.ErrShuttingDown
	}
	if m.env.Kind == wire.KindRequest {
		o.served.of(m.env.Packet).result(0, err)
		o.n.reply(m.from, wire.ErrorEnvelope(m.env.Corr, err))
	}
	o.n.work.done()
}

// handle runs one admitted message's handler and answers it.
//
// It runs on a pool worker: the path from here to the reply's queueing
// keeps its frames small (the error answers are out of line), so a handler
// that itself needs little stack never makes the worker grow and copy its
// stack.
// s is the worker's run slot (the hung check reads its deadline).
func (o *ownerActor) handle(m *inbound, s *runSlot) {
	defer o.n.work.done()
	switch m.env.Kind {
	case wire.KindSend:
		o.handleSend(m, s)
	case wire.KindRequest:
		o.handleRequest(m, s)
	}
}

func (o *ownerActor) initContext(m *inbound) *Context {
	hc := &m.hc
	hc.Channel, hc.Packet, hc.From, hc.RID, hc.node = o.channel, m.env.Packet, m.from.rid, o.n.rid, o.n
	return hc
}

func (o *ownerActor) handleSend(m *inbound, s *runSlot) {
	h := o.sends[m.env.Packet]
	if h == nil {
		o.served.unknown.sent(s.shard)
		o.n.cnt.protocolErrors.Add(1)
		if o.n.cfg.Tracer != nil {
			o.n.traceRefused(m.from, &m.env, fmt.Errorf("%w: %q", zerr.ErrUnknownPacket, m.env.Packet))
		}
		return
	}
	hc := o.initContext(m)
	hc.Context = o.n.hctx
	sp := o.n.startHandler(m, hc)
	at := arrival(m)
	s.start(at.Add(DefaultRequestTimeout))
	ps := o.served.of(m.env.Packet)
	queued := ps.began(s.shard, at)
	o.runSend(h, hc, m.env.Payload)
	ps.ended(s.shard, at, queued, true, nil)
	s.end()
	endSpan(sp, nil)
}

func (o *ownerActor) handleRequest(m *inbound, s *runSlot) {
	h := o.requests[m.env.Packet]
	if h == nil {
		o.refuseUnknown(m, s.shard)
		return
	}
	hc := o.initContext(m)
	at := arrival(m)
	m.dc.parent, m.dc.deadline = o.n.hctx, at.Add(time.Duration(m.env.TimeoutMs)*time.Millisecond)
	hc.Context = &m.dc
	sp := o.n.startHandler(m, hc)
	s.start(m.dc.deadline)
	ps := o.served.of(m.env.Packet)
	queued := ps.began(s.shard, at)
	out, err := o.runRequest(h, hc, m.env.Payload)
	ps.ended(s.shard, at, queued, false, handlerResult(err))
	s.end()
	m.dc.release()
	endSpan(sp, err)
	if err != nil {
		o.replyError(m, handlerError(err))
		return
	}
	o.n.replyPayload(m.from, m.env.Corr, out, o.lowHeadroom())
}

// arrival is when m arrived (deliverAt keeps it in the deadline field until
// the handler starts), or now.
func arrival(m *inbound) time.Time {
	if at := m.dc.deadline; !at.IsZero() {
		return at
	}
	return time.Now()
}

// refuseUnknown answers a request for a packet without a handler (out of
// line: see handle).
//
//go:noinline
func (o *ownerActor) refuseUnknown(m *inbound, shard int) {
	err := fmt.Errorf("%w: %q", zerr.ErrUnknownPacket, m.env.Packet)
	o.served.unknown.result(shard, err)
	o.n.traceRefused(m.from, &m.env, err)
	o.replyError(m, err)
}

// replyError answers m with an Error envelope (out of line: see handle).
//
//go:noinline
func (o *ownerActor) replyError(m *inbound, err error) {
	o.n.reply(m.from, wire.ErrorEnvelope(m.env.Corr, err))
}

// lowHeadroom reports this channel's headroom when it is low (under a
// quarter of the budget), so callers skip a full Server before it refuses;
// nil otherwise (no allocation on the common path).
func (o *ownerActor) lowHeadroom() map[string]uint32 {
	if o.channel == "" || o.q == nil {
		return nil
	}
	st := o.q.Stats()
	if st.MaxMessages <= 0 {
		return nil
	}
	// quotaHeadroom(ref), computed from this one reading of the stats.
	free := st.MaxMessages - st.Depth
	if st.MaxBytes > 0 && st.Bytes >= st.MaxBytes {
		free = 0
	}
	h := uint32(max(free, 0))
	if int64(h) >= st.MaxMessages/4 {
		return nil
	}
	return map[string]uint32{o.channel: h}
}

// runRequest calls h, turning a panic into an ErrHandler result so one bad
// request never takes the owner down.
func (o *ownerActor) runRequest(h RequestHandler, c *Context, payload []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			o.n.log.Error().Str("packet", c.Packet).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panicked")
			err = fmt.Errorf("%w: handler panicked: %v", zerr.ErrHandler, r)
		}
	}()
	return h(c, payload)
}

func (o *ownerActor) runSend(h SendHandler, c *Context, payload []byte) {
	defer func() {
		if r := recover(); r != nil {
			o.n.log.Error().Str("packet", c.Packet).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panicked")
		}
	}()
	h(c, payload)
}

// handlerResult is the result code a handler's return counts under (nil
// for success): handlerError's classification, without its allocation on
// the common path.
func handlerResult(err error) error {
	if err == nil {
		return nil
	}
	return handlerError(err)
}

// handlerError keeps framework errors a handler returned (e.g. ErrBusy from
// a nested call) and marks everything else ErrHandler.
func handlerError(err error) error {
	if wire.CodeOf(err) != wire.CodeHandler {
		return err
	}
	return fmt.Errorf("%w: %w", zerr.ErrHandler, err)
}

// deadlineCtx is a handler's context: the node's handler context plus the
// caller's deadline. Unlike context.WithTimeout it starts no timer and
// allocates nothing until a handler asks for Done(); most handlers never
// do. What Done needs lives in a dcDone made on demand, so the context
// stays small inside the request's one allocation (inbound).
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time

	// x is nil until Done or release; dcReleased once released without a
	// Done; else the Done state. The common path (no Done: release only)
	// is one compare-and-swap; mu serializes Done's setup, cancel and the
	// release of a context whose Done was asked for, and guards x.err.
	x  atomic.Pointer[dcDone]
	mu sync.Mutex
}

// dcDone is a deadlineCtx's state once a handler asked for Done.
type dcDone struct {
	done       chan struct{}
	err        error
	stopTimer  func() bool
	stopParent func() bool
}

// dcReleased marks a context released before anyone asked for Done.
var dcReleased = &dcDone{}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Value(key any) any { return c.parent.Value(key) }

func (c *deadlineCtx) Err() error {
	var err error
	if x := c.x.Load(); x == dcReleased {
		err = context.Canceled
	} else if x != nil {
		c.mu.Lock()
		err = x.err
		c.mu.Unlock()
	}
	if err != nil {
		return err
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.x.Load()
	if cur != nil && cur != dcReleased {
		return cur.done
	}
	x := &dcDone{done: make(chan struct{})}
	if cur == dcReleased || !c.x.CompareAndSwap(nil, x) {
		// Released (perhaps just now, by release's fast path).
		x.err = context.Canceled
		close(x.done)
		c.x.Store(x)
		return x.done
	}
	t := time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	x.stopTimer = t.Stop
	x.stopParent = context.AfterFunc(c.parent, func() { c.cancel(c.parent.Err()) })
	return x.done
}

// cancel ends a context whose Done was asked for (first error wins).
func (c *deadlineCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x := c.x.Load(); x != nil && x != dcReleased && x.err == nil {
		x.err = err
		close(x.done)
	}
}

// release ends the context when the handler returned.
func (c *deadlineCtx) release() {
	if c.x.CompareAndSwap(nil, dcReleased) {
		return // no Done asked for: nothing to stop
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	x := c.x.Load()
	if x == dcReleased {
		return
	}
	if x.err == nil {
		x.err = context.Canceled
		close(x.done)
	}
	if x.stopTimer != nil {
		x.stopTimer()
		x.stopParent()
	}
}

var _ context.Context = (*deadlineCtx)(nil)
