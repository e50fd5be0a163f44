package spot

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// A request handler may leave its request open and answer it from a
// later turn of the same Spot — an OnReply turn, a timer, another
// request: Defer. The request still ends exactly once: by that answer, at
// the caller's deadline (ErrTimeout), or when the activation ends first
// (deactivation, drain, a move, a fence, a panic: ErrOutcomeUnknown at
// once — the handler ran, its answer never came). An open request keeps
// the Spot from idle deactivation, and a move waits for the open requests
// (waitOpen) before the Spot's last turn.

// openReq is one request left open (touched by the Spot's turns; done is
// the exactly-once gate shared with the deadline timer).
type openReq struct {
	d     *delivery
	act   *activation
	done  atomic.Bool
	timer *time.Timer
}

// end answers the request once; it reports whether this call did. The
// Spot's turns call it (and stop the deadline timer, which they set); the
// timer itself calls expire.
func (o *openReq) end(rt *runtime, rep []byte) bool {
	if !o.done.CompareAndSwap(false, true) {
		return false
	}
	o.timer.Stop()
	rt.answer(o.d.r, &o.d.h, rep)
	o.act.closeOne()
	return true
}

// expire is end from the deadline timer's goroutine (it must not read the
// timer field the turn may still be writing).
func (o *openReq) expire(rt *runtime, rep []byte) {
	if !o.done.CompareAndSwap(false, true) {
		return
	}
	rt.answer(o.d.r, &o.d.h, rep)
	o.act.closeOne()
}

// closeOne counts an open request ended; the last one opens the gate of a
// move waiting for them (when no async reply is owed either).
func (a *activation) closeOne() {
	if a.openN.Add(-1) == 0 {
		a.checkQuiet()
	}
}

// checkQuiet opens the gate of a move waiting on the Spot once no request
// is open and no reply to its asynchronous calls is owed.
func (a *activation) checkQuiet() {
	if g := a.quiet.Load(); g != nil && a.quietNow() {
		g.open()
	}
}

func (a *activation) quietNow() bool { return a.openN.Load() == 0 && a.drain.owed.Load() <= 0 }

// quietGate is what a move waits on: closed once the Spot has no open
// request.
type quietGate struct {
	ch   chan struct{}
	once sync.Once
}

func newQuietGate() *quietGate { return &quietGate{ch: make(chan struct{})} }

func (g *quietGate) open() { g.once.Do(func() { close(g.ch) }) }

// quiesce is a move's message to the Spot, behind everything the Spot had
// queued: open the gate when no request is open and no reply to its
// asynchronous calls is owed any more (those replies would otherwise be
// dropped: they do not follow a Spot to its new owner).
type quiesce struct{ gate *quietGate }

// onQuiesce is the Spot's side of quiesce: the queued calls ran (they may
// have left requests open); later turns (replies, timers) answer them.
func (a *spotActor) onQuiesce(q *quiesce) {
	a.act.quiet.Store(q.gate)
	if a.gone || a.act.quietNow() {
		q.gate.open()
		return
	}
	a.rt.stats.moveWaits.Add(1)
	a.act.checkQuiet() // the last one ended meanwhile
}

// waitOpen is the mover's wait, before it asks the target to prepare, for
// the requests the Spot left open and the replies it is owed: until they
// are answered and taken, or wait passed; what is still open then ends
// with ErrOutcomeUnknown in the Spot's last turn, and the replies still
// owed are counted abandoned.
func (rt *runtime) waitOpen(act *activation, wait time.Duration) {
	g := newQuietGate()
	if act.ref.Tell(&quiesce{gate: g}) != nil {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-g.ch:
	case <-t.C:
	case <-rt.base.Done():
	}
}

// Later is a request its handler left open (Defer), to be answered once
// by a later turn of the same Spot.
type Later[Resp any] struct {
	o *openReq
	p interface {
		EncodeReply(Resp) ([]byte, error)
	}
}

// Defer leaves the request whose turn c is open: the handler returns
// (whatever it returns is ignored) and a later turn of the same Spot
// answers it with Later.Reply or Later.Fail. p is the request's packet
// (its reply type). It fails with ErrConfig outside a request's turn, for
// a one-way message, or called twice in one turn.
func Defer[Req, Resp any](c *Context, p wire.Packet[Req, Resp]) (*Later[Resp], error) {
	if c == nil || c.act == nil || c.req == nil {
		return nil, fmt.Errorf("%w: Defer needs the Context of a request's turn", ErrConfig)
	}
	d := c.req
	if d.r.OneWay || d.h.flags&flagSendAsCall != 0 {
		return nil, fmt.Errorf("%w: a one-way message has no reply to defer", ErrConfig)
	}
	if d.deferred != nil {
		return nil, fmt.Errorf("%w: the request is deferred already", ErrConfig)
	}
	if d.h.packet != p.Name() {
		return nil, fmt.Errorf("%w: the request is %q, not %q", ErrConfig, d.h.packet, p.Name())
	}
	o := &openReq{d: d, act: c.act}
	d.deferred = o
	c.act.openN.Add(1)
	if c.act.open == nil {
		c.act.open = map[*openReq]struct{}{}
	}
	c.act.open[o] = struct{}{}
	rt := c.rt
	o.timer = time.AfterFunc(time.Until(d.r.Deadline), func() {
		o.expire(rt, errorReply(fmt.Errorf("%w: spot %s/%s: the deferred reply did not come before the deadline", zerr.ErrTimeout, c.Kind, c.ID)))
	})
	return &Later[Resp]{o: o, p: p}, nil
}

// Reply answers the open request with resp, from a turn c of the same
// Spot. With ReplyAfterWrite the Spot's state is saved first (a failed
// save answers ErrOutcomeUnknown, or ErrFenced). It returns an error when
// the request has ended already (its deadline passed, or its activation
// ended) or c is not a turn of its Spot.
func (l *Later[Resp]) Reply(c *Context, resp Resp) error {
	if err := l.check(c); err != nil {
		return err
	}
	b, err := l.p.EncodeReply(resp)
	if err != nil {
		return err
	}
	rep := okReply(c.act.epoch, b)
	if err := c.act.saveForReply(); err != nil {
		rep = errorReply(err)
	}
	return l.ended(l.o.end(c.rt, rep))
}

// Fail answers the open request with err (ErrHandler to the caller,
// carrying its text, unless it is one of the runtime's typed errors).
func (l *Later[Resp]) Fail(c *Context, err error) error {
	if cerr := l.check(c); cerr != nil {
		return cerr
	}
	if wire.CodeOf(err) == wire.CodeHandler {
		err = fmt.Errorf("%w: %w", zerr.ErrHandler, err)
	}
	return l.ended(l.o.end(c.rt, errorReply(err)))
}

func (l *Later[Resp]) check(c *Context) error {
	if c == nil || c.act != l.o.act {
		return fmt.Errorf("%w: a deferred request is answered by a turn of its own Spot's activation", ErrConfig)
	}
	return nil
}

func (l *Later[Resp]) ended(did bool) error {
	if !did {
		return fmt.Errorf("%w: the deferred request has ended already (its deadline, or its activation)", ErrOutcomeUnknown)
	}
	return nil
}

// Open reports whether the request is still waiting for its answer.
func (l *Later[Resp]) Open() bool { return !l.o.done.Load() }

// endOpen ends every request still open on act (its activation ends):
// the handler ran, its answer never came.
func (rt *runtime) endOpen(act *activation, why string) {
	for o := range act.open {
		o.end(rt, errorReply(fmt.Errorf("%w: spot %s/%s: %s with the request open", ErrOutcomeUnknown, o.d.h.kind, act.id, why)))
	}
	act.open = nil
}

// forgetEnded drops the open requests that ended (a turn's bookkeeping).
func (act *activation) forgetEnded() {
	for o := range act.open {
		if o.done.Load() {
			delete(act.open, o)
		}
	}
}
