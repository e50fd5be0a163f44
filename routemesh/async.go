package routemesh

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// Reply is the one terminal result of an asynchronous call, delivered as
// a message to the actor that started it.
type Reply struct {
	// Tag is what the caller passed: its own correlation.
	Tag any
	// From is the RID that served the call ("" when no target was chosen).
	From string
	// Payload is the reply; nil when Err is set.
	Payload []byte
	// Err is nil, or an error matching the sentinels a blocking call ends
	// with (ErrTimeout included).
	Err error
}

// CallAsync is Call without waiting, for callers inside an actor: the call's
// one terminal result arrives as a *Reply (carrying tag) in replyTo's
// mailbox (an actor passes its own, c.ReplyTo()) within timeout (0 = DefaultRequestTimeout). No goroutine waits for
// it. A slot for the reply is reserved in replyTo's mailbox first, so the
// reply is never refused: when no slot can be reserved (the mailbox is
// full, or the actor stopped) CallAsync returns that error, nothing is sent
// and no Reply will come. Otherwise it returns nil and exactly one Reply
// follows — errors that happen at once (no target, busy) included.
func (n *Node) CallAsync(channel, packet string, payload []byte, timeout time.Duration, replyTo actors.ReplyTo, tag any) error {
	slot, err := replyTo.Reserve()
	if err != nil {
		return err
	}
	a := &asyncCall{slot: slot, tag: tag}
	n.callAsync(a, channel, "", packet, payload, timeout, nil)
	return nil
}

// CallNodeAsync is CallNode without waiting; see CallAsync.
func (n *Node) CallNodeAsync(rid, packet string, payload []byte, timeout time.Duration, replyTo actors.ReplyTo, tag any) error {
	slot, err := replyTo.Reserve()
	if err != nil {
		return err
	}
	a := &asyncCall{slot: slot, tag: tag}
	n.callAsync(a, "", rid, packet, payload, timeout, nil)
	return nil
}

// Future is the pending result of a call started by a goroutine that does
// not want to wait yet (to fan out several calls, say).
type Future struct {
	// set is 1 once r holds the result. The done channel is made only for
	// a caller that asks for it (Done, or Wait before the result is
	// there): a future waited for after its call ended allocates none.
	set  atomic.Uint32
	mu   sync.Mutex
	done chan struct{}
	r    Reply
}

// closedChan is the Done channel of every future that ended before anyone
// asked for its channel.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// complete stores the result and wakes the waiters: exactly once.
func (f *Future) complete(r Reply) {
	f.mu.Lock()
	f.r = r
	f.set.Store(1)
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
}

// Done is closed once the result is there.
func (f *Future) Done() <-chan struct{} {
	if f.set.Load() == 1 {
		return closedChan
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set.Load() == 1 {
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// Wait returns the call's result, or ctx's error (as ErrCancelled or
// ErrTimeout) if ctx ends first; the call itself still ends on its own
// deadline.
func (f *Future) Wait(ctx context.Context) ([]byte, error) {
	if f.set.Load() == 1 {
		return f.r.Payload, f.r.Err
	}
	select {
	case <-f.Done():
		return f.r.Payload, f.r.Err
	case <-ctx.Done():
		return nil, ctxError(ctx.Err())
	}
}

// From is the RID that served the call, once Done.
func (f *Future) From() string {
	if f.set.Load() == 1 {
		return f.r.From
	}
	return ""
}

// futureCall is a Future with its call's state: one allocation per call.
type futureCall struct {
	Future
	asyncCall
}

// CallFuture starts Call and returns at once; the Future ends within
// timeout (0 = DefaultRequestTimeout).
func (n *Node) CallFuture(channel, packet string, payload []byte, timeout time.Duration) *Future {
	fc := &futureCall{}
	fc.fut = &fc.Future
	n.callAsync(&fc.asyncCall, channel, "", packet, payload, timeout, nil)
	return &fc.Future
}

// CallNodeFuture starts CallNode and returns at once; see CallFuture.
func (n *Node) CallNodeFuture(rid, packet string, payload []byte, timeout time.Duration) *Future {
	fc := &futureCall{}
	fc.fut = &fc.Future
	n.callAsync(&fc.asyncCall, "", rid, packet, payload, timeout, nil)
	return &fc.Future
}

// asyncCall is the state of one call nobody waits for: its entry in the
// call table and where its Reply goes (a Future, or a reserved mailbox
// slot). It ends exactly once, on whichever goroutine ends the call (reply,
// peer loss, shutdown, the table's deadline sweep, or the caller's for an
// error at once); the entry is never reused.
type asyncCall struct {
	p       pending
	n       *Node
	l       *link
	channel string
	start   int64 // table clock at the start, for the latency histogram

	fut  *Future            // the Reply goes here,
	fn   func(Reply)        // or to this function,
	slot actors.Reservation // or, when both are nil, into this slot
	tag  any
}

// notify ends a registered call with its table result.
func (a *asyncCall) notify(r result) {
	l := a.l
	if a.channel != "" && l.p != nil {
		if r.headroom != nil {
			l.setHeadroom(r.headroom)
		} else if b := l.full[a.channel]; b != nil && b.Load() {
			b.Store(false)
		}
	}
	a.end(Reply{From: l.rid, Payload: r.payload, Err: r.err}, r.at)
}

// end counts the result and delivers it; at is the table clock when the
// result arrived (0 = read it now). It must not block.
func (a *asyncCall) end(r Reply, at int64) {
	n := a.n
	if a.channel != "" {
		if at == 0 {
			at = n.calls.now()
		}
		n.lat.observe(time.Duration(at - a.start))
	}
	n.cnt.result(r.Err)
	if a.fut != nil {
		a.fut.complete(r)
		return
	}
	if a.fn != nil {
		a.fn(r)
		return
	}
	a.post(r)
}

// post delivers r into the reserved slot (apart from end, so that only
// this path moves the Reply to the heap).
func (a *asyncCall) post(r Reply) {
	r.Tag = a.tag
	a.slot.Post(&r)
}

// callAsync chooses the target (channel select-one, or rid), registers the
// call a and submits it; a ends exactly once (see asyncCall).
// parent, when not nil, carries the trace the call continues.
func (n *Node) callAsync(a *asyncCall, channel, rid, packet string, payload []byte, timeout time.Duration, parent context.Context) {
	n.cnt.calls.Add(1)
	a.n, a.channel = n, channel
	a.start = n.calls.now()
	var l *link
	var err error
	if channel != "" {
		l, err = n.selectOne(channel)
	} else {
		l, err = n.directTarget(rid)
	}
	if err != nil {
		a.end(Reply{Err: err}, 0)
		return
	}
	a.l = l
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	e := wire.Envelope{Kind: wire.KindRequest, Channel: channel, Packet: packet, Payload: payload,
		TimeoutMs: uint32(min(timeout.Milliseconds()+1, int64(^uint32(0))))}
	corr := n.corr.Add(1)
	e.Corr = corr
	p := &a.p
	if l.p != nil {
		p.pipe = l.p.id
	}
	p.rid, p.notify = l.rid, a
	if t := n.cfg.Tracer; t != nil {
		p.notify = n.traceAsync(t, parent, a, l, &e)
	}
	p.deadline, p.timeout = a.start+int64(timeout), timeout
	n.calls.addNotify(corr, p)
	if err := n.submit(l, e); err != nil {
		if p := n.calls.take(corr); p != nil {
			p.finish(result{err: err})
		}
		return
	}
	// As in call: the pipe may have been dropped, or every pending call
	// failed for shutdown, between the target lookup and the registration.
	if lost, down := l.p != nil && l.p.getState() == pipeClosed, n.callsClosed.Load(); lost || down {
		if p := n.calls.take(corr); p != nil {
			err := fmt.Errorf("%w: %s: connection closed", zerr.ErrPeerLost, l.rid)
			if down {
				err = zerr.ErrShuttingDown
			}
			p.finish(result{err: err})
		}
	}
}
