package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// deactivate asks a Spot for its last turn.
type deactivate struct{}

// spotActor is one active Spot: it owns the state and runs one message at
// a time. A panicking handler ends its call with ErrHandler and the
// supervisor restarts the actor with the same identity (a fresh state and
// the OnActivate hook again).
type spotActor struct {
	rt    *runtime
	ks    *kindState
	act   *activation
	state any
	turns uint64
	gone  bool  // past its last turn: later calls go back to the kind actor
	fail  error // OnActivate (or the restore) failed: calls end with it
	dirty bool  // persistent kinds: changed since the last save
	since int   // messages since the last save
	// reread: a ReplyAfterWrite save failed with an unknown outcome; the
	// state is read again from the store before the next turn.
	reread bool
}

var _ actors.FailureHandler = (*spotActor)(nil)

func (a *spotActor) Receive(c *actors.Context) {
	switch msg := c.Message().(type) {
	case *actors.Started:
		a.start(c)
	case *delivery:
		a.turn(c, msg)
	case *deactivate:
		a.last(c, true)
	case *Reply:
		a.reply(c, msg) // a reply taken as a turn counts as a change (persistence)
	case *handoff:
		a.lastForMove(c, msg)
	case *quiesce:
		a.onQuiesce(msg)
	case *timerFire:
		a.fire(c, msg)
	case *restoreTimers:
		a.restoreTimers(msg)
	case *checkpoint:
		if !a.gone {
			_ = a.save()
		}
	}
}

func (a *spotActor) start(c *actors.Context) {
	reg := a.ks.reg
	a.act.turn.Store(0)
	a.dirty, a.since = false, 0
	a.act.saved.Store(time.Now().UnixNano())
	if reg.persist != nil {
		s, err := a.restoreFirst()
		if err != nil {
			a.rt.log.Error().Err(err).Str("kind", reg.name).Str("id", a.act.id).Msg("spots: restoring the state failed")
			a.fail = fmt.Errorf("%w: activation of %s/%s: %w", zerr.ErrHandler, reg.name, a.act.id, err)
			a.state = reg.newState(a.act.id)
			a.last(c, false)
			return
		}
		a.state = s
	} else {
		a.state = reg.newState(a.act.id)
	}
	if reg.reentrant {
		a.act.re.setRun(a.runReentrant)
	}
	if p := reg.persist; p != nil && p.ReplyAfterWrite {
		a.act.saveNow = a.afterWrite
	}
	if reg.onActivate == nil {
		return
	}
	ctx, cancel := context.WithTimeout(a.rt.base, 30*time.Second)
	defer cancel()
	t := a.enter()
	hc := a.context(ctx, "", nil, t)
	err := reg.onActivate(hc, a.state)
	a.leave(c, t)
	if err != nil {
		a.rt.log.Warn().Err(err).Str("kind", reg.name).Str("id", a.act.id).Msg("spots: activation hook failed")
		a.fail = fmt.Errorf("%w: activation of %s/%s: %w", zerr.ErrHandler, reg.name, a.act.id, err)
		a.last(c, false)
	}
}

func (a *spotActor) context(ctx context.Context, from string, chain []link, turn uint64) *Context {
	return turnContext(a.rt, a.ks, a.act, ctx, from, chain, turn)
}

// turnContext is the Context of one turn; turn numbers the turn in the
// activation's reentry stack (0 when the kind is not reentrant).
func turnContext(rt *runtime, ks *kindState, act *activation, ctx context.Context, from string, chain []link, turn uint64) *Context {
	hc := new(Context)
	initContext(hc, rt, ks, act, ctx, from, chain, turn)
	return hc
}

func initContext(hc *Context, rt *runtime, ks *kindState, act *activation, ctx context.Context, from string, chain []link, turn uint64) {
	*hc = Context{Context: ctx, Kind: ks.reg.name, ID: act.id, Epoch: act.epoch, From: from,
		Node: rt.n, act: act, rt: rt, ks: ks, chain: chain, turn: turn}
}

// enter starts a turn of the actor in a reentrant kind's turn stack (0
// for other kinds).
func (a *spotActor) enter() uint64 {
	if !a.ks.reg.reentrant {
		return 0
	}
	return a.act.re.enter()
}

// leave ends the actor's turn t and runs, as turns of their own, the
// reentrant deliveries still queued when it ended (their chains no longer
// wait on this Spot).
func (a *spotActor) leave(c *actors.Context, t uint64) {
	if t == 0 {
		return
	}
	for _, d := range a.act.re.leave(t) {
		q := a.act.ref.Quota()
		size := d.admitted
		d.admitted = 0
		a.turn(c, d)
		q.Release(size)
	}
}

// turn runs one delivery in the Spot's turn (or sends it back to the kind
// actor after the Spot's last turn).
func (a *spotActor) turn(c *actors.Context, d *delivery) {
	rt := a.rt
	if a.gone {
		if a.fail != nil {
			rt.answer(d.r, &d.h, errorReply(a.fail))
			return
		}
		rt.toKind(a.ks, d)
		return
	}
	t := a.enter()
	a.run(d, t)
	a.leave(c, t)
}

// run runs one delivery as turn t: the actor's own, or a reentrant one
// run by a goroutine of the turn below it while that goroutine waits in a
// call (one at a time: see reentry).
func (a *spotActor) run(d *delivery, t uint64) {
	if a.reread {
		if err := a.reload(); err != nil {
			a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: re-reading its state after an unknown save: %w; not run", zerr.ErrBusy, a.ks.reg.name, a.act.id, err)))
			return
		}
	}
	if len(a.act.open) > 0 {
		a.act.forgetEnded()
	}
	prev := a.act.turn.Load()
	a.turns++
	a.act.turn.Store(a.turns)
	var before func() error
	if p := a.ks.reg.persist; p != nil && p.ReplyAfterWrite {
		before = a.afterWrite
	}
	runTurn(a.rt, a.ks, a.act, a.state, d, before, t)
	a.act.turn.Store(prev)
	if before == nil {
		a.changed()
	}
}

// runReentrant runs a reentrant delivery taken from the reentry queue as
// turn t. A panic ends its call with ErrHandler; the Spot is not
// restarted (the turn it interleaved with still runs).
func (a *spotActor) runReentrant(d *delivery, t uint64) {
	q, size := a.act.ref.Quota(), d.admitted
	d.admitted = 0
	defer q.Release(size)
	defer func() {
		if p := recover(); p != nil {
			a.rt.log.Error().Str("kind", a.ks.reg.name).Str("id", a.act.id).Interface("panic", p).Msg("spots: reentrant handler panicked")
			a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: handler panicked", zerr.ErrHandler, a.ks.reg.name, a.act.id)))
		}
	}()
	a.run(d, t)
}

// requestTurn is what a request turn allocates: its context and the
// handler's Context, in one allocation.
type requestTurn struct {
	tc turnCtx
	hc Context
}

// runTurn runs one delivery's handler with the Spot's state and answers
// it. The lease is checked before the turn (a fenced owner runs nothing:
// the caller is sent elsewhere) and before the reply (a lease lost during
// the turn ends the call with ErrFenced).
func runTurn(rt *runtime, ks *kindState, act *activation, state any, d *delivery, beforeReply func() error, turn uint64) {
	reg := ks.reg
	now := time.Now()
	act.touch(now)
	if !d.r.OneWay && !now.Before(d.r.Deadline) {
		// The caller has its ErrTimeout already: do not run it late.
		rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: the call waited past its deadline; not run", zerr.ErrTimeout)))
		return
	}
	if !rt.valid(act, now) {
		rt.answer(d.r, &d.h, retryReply("owner fenced"))
		return
	}
	rq := &requestTurn{tc: turnCtx{parent: rt.base, deadline: d.r.Deadline}} // no timer unless the handler waits on it
	tc := &rq.tc
	ctx, sp := rt.startTurn(tc, ks, act, d)
	hc := &rq.hc
	initContext(hc, rt, ks, act, ctx, d.r.From, d.h.chain, turn)
	hc.req = d
	hc.Source = SourceRequest
	if d.r.OneWay || d.h.flags&flagSendAsCall != 0 {
		hc.Source = SourceSend
	}
	var out []byte
	var err error
	if d.r.OneWay || d.h.flags&flagSendAsCall != 0 {
		if fn := reg.sends[d.h.packet]; fn != nil {
			fn(hc, state, d.h.body)
		} else {
			rt.stats.sendsDropped.Add(1)
		}
	} else if fn := reg.requests[d.h.packet]; fn != nil {
		out, err = fn(hc, state, d.h.body)
	} else {
		err = fmt.Errorf("%w: spot kind %s has no packet %q", zerr.ErrUnknownPacket, reg.name, d.h.packet)
	}
	tc.stop()
	if err == nil && beforeReply != nil {
		err = beforeReply()
	}
	if d.deferred != nil {
		// Left open: a later turn answers it (deferred.go).
		endTurn(sp, nil)
		ks.turns.count(d.h.packet, hc.Source, nil)
		return
	}
	switch {
	case !rt.valid(act, time.Now()):
		err = fmt.Errorf("%w: %s/%s lost its lease during the turn", ErrFenced, reg.name, act.id)
		endTurn(sp, err)
		rt.answer(d.r, &d.h, errorReply(err))
	case err != nil:
		if wire.CodeOf(err) == wire.CodeHandler {
			err = fmt.Errorf("%w: %w", zerr.ErrHandler, err)
		}
		endTurn(sp, err)
		rt.answer(d.r, &d.h, errorReply(err))
	default:
		endTurn(sp, nil)
		rt.answer(d.r, &d.h, okReply(act.epoch, out))
	}
	ks.turns.count(d.h.packet, hc.Source, err)
}

// last runs the Spot's last turn (the deactivate hook unless fenced),
// tells the kind actor and stops; calls queued behind it go back to the
// kind actor, which reactivates the Spot for them (or, on a draining
// node, sends them to the new owner). A drain's last turn first waits for
// the replies the Spot is owed (drain.go): it runs again when the last
// one came or the grace ended.
func (a *spotActor) last(c *actors.Context, hook bool) {
	if a.gone && !a.act.drain.winding.Load() {
		return
	}
	a.gone = true
	if hook && a.windDown() {
		return
	}
	reg := a.ks.reg
	if hook && reg.onDeactivate != nil && !a.act.fenced.Load() {
		ctx, cancel := context.WithTimeout(a.rt.base, 30*time.Second)
		t := a.enter()
		reg.onDeactivate(a.context(ctx, "", nil, t), a.state)
		a.leave(c, t)
		cancel()
		a.changed()
	}
	if hook && !a.act.fenced.Load() {
		a.dirty = a.dirty || a.act.dirty.Load()
		if err := a.save(); err != nil {
			a.rt.log.Warn().Err(err).Str("kind", reg.name).Str("id", a.act.id).Msg("spots: the last save failed; work since the previous save is lost")
		}
	}
	a.abandon()
	a.rt.clock.cancelAll(a.act) // timers stop with the activation
	a.rt.endOpen(a.act, "the Spot deactivated")
	if ref := a.ks.ref.Load(); ref != nil {
		_ = ref.TellControl(&deactivated{act: a.act})
	}
	c.Poison()
}

// MessageFailed ends the call whose handler panicked. A reentrant kind's
// turn stack goes with the turn: what was queued for it becomes ordinary
// messages of the Spot.
func (a *spotActor) MessageFailed(msg any) {
	a.rt.endOpen(a.act, "the Spot's handler panicked")
	if a.ks.reg.reentrant {
		q := a.act.ref.Quota()
		for _, d := range a.act.re.reset() {
			q.Release(d.admitted)
			d.admitted = 0
			if err := a.act.ref.Tell(d); err != nil {
				a.rt.toKind(a.ks, d)
			}
		}
	}
	if d, ok := msg.(*delivery); ok {
		a.act.turn.Store(0)
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: handler panicked", zerr.ErrHandler, a.ks.reg.name, a.act.id)))
	}
}

// MessageDropped sends a call left in a stopped Spot's mailbox back to the
// kind actor; a reply it was still owed counts as abandoned.
func (a *spotActor) MessageDropped(msg any) {
	if _, ok := msg.(*Reply); ok && a.act.drain.took() {
		a.rt.stats.asyncAbandoned.Add(1)
	}
	if d, ok := msg.(*delivery); ok {
		if a.fail != nil {
			a.rt.answer(d.r, &d.h, errorReply(a.fail))
			return
		}
		a.rt.toKind(a.ks, d)
	}
}
