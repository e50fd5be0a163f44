package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
}

var _ actors.FailureHandler = (*spotActor)(nil)

func (a *spotActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.start(c)
	case *delivery:
		a.turn(c, msg)
	case *deactivate:
		a.last(c, true)
	case *Reply:
		a.reply(msg) // a reply taken as a turn counts as a change (persistence)
	case *handoff:
		a.lastForMove(c, msg)
	case *checkpoint:
		if !a.gone {
			_ = a.save()
		}
	}
}

func (a *spotActor) start(c actor.Context) {
	reg := a.ks.reg
	a.act.turn.Store(0)
	a.dirty, a.since = false, 0
	a.act.saved.Store(time.Now().UnixNano())
	if reg.persist != nil {
		s, err := a.restore()
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
		a.act.setState(a.state)
	}
	if reg.onActivate == nil {
		return
	}
	ctx, cancel := context.WithTimeout(a.rt.base, 30*time.Second)
	defer cancel()
	hc := a.context(ctx, "", nil)
	if err := reg.onActivate(hc, a.state); err != nil {
		a.rt.log.Warn().Err(err).Str("kind", reg.name).Str("id", a.act.id).Msg("spots: activation hook failed")
		a.fail = fmt.Errorf("%w: activation of %s/%s: %w", zerr.ErrHandler, reg.name, a.act.id, err)
		a.last(c, false)
	}
}

func (a *spotActor) context(ctx context.Context, from string, chain []link) *Context {
	return turnContext(a.rt, a.ks, a.act, ctx, from, chain)
}

func turnContext(rt *runtime, ks *kindState, act *activation, ctx context.Context, from string, chain []link) *Context {
	return &Context{Context: ctx, Kind: ks.reg.name, ID: act.id, Epoch: act.epoch, From: from,
		Node: rt.n, act: act, rt: rt, ks: ks, chain: chain}
}

// turn runs one delivery in the Spot's turn (or sends it back to the kind
// actor after the Spot's last turn).
func (a *spotActor) turn(c actor.Context, d *delivery) {
	rt := a.rt
	if a.gone {
		if a.fail != nil {
			rt.answer(d.r, &d.h, errorReply(a.fail))
			return
		}
		rt.toKind(a.ks, d)
		return
	}
	a.turns++
	a.act.turn.Store(a.turns)
	var before func() error
	if p := a.ks.reg.persist; p != nil && p.ReplyAfterWrite {
		before = func() error { a.dirty = true; a.act.dirty.Store(true); return a.save() }
	}
	runTurn(rt, a.ks, a.act, a.state, d, before)
	a.act.turn.Store(0)
	if before == nil {
		a.changed()
	}
}

// runTurn runs one delivery's handler with the Spot's state and answers
// it. The lease is checked before the turn (a fenced owner runs nothing:
// the caller is sent elsewhere) and before the reply (a lease lost during
// the turn ends the call with ErrFenced).
func runTurn(rt *runtime, ks *kindState, act *activation, state any, d *delivery, beforeReply func() error) {
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
	ctx, cancel := context.WithDeadline(rt.base, d.r.Deadline)
	ctx, sp := rt.startTurn(ctx, ks, act, d)
	hc := turnContext(rt, ks, act, ctx, d.r.From, d.h.chain)
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
		err = fmt.Errorf("%w: spot kind %s has no packet %q", wire.ErrUnknownPacket, reg.name, d.h.packet)
	}
	cancel()
	if err == nil && beforeReply != nil {
		if serr := beforeReply(); serr != nil {
			err = fmt.Errorf("%w: %w", errStateNotSaved, serr)
		}
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
}

// reentrant runs a delivery that belongs to a call chain one of act's
// turns is waiting on (a reentrant kind): now, on its own goroutine, while
// that turn is blocked in its call — so the Spot's state is touched by one
// goroutine at a time, interleaved only where the waiting turn called out.
// A panic ends the call with ErrHandler (the Spot is not restarted: its
// waiting turn still runs).
func reentrant(rt *runtime, ks *kindState, act *activation, d *delivery) {
	ok := rt.goStore(func() {
		defer func() {
			if p := recover(); p != nil {
				rt.log.Error().Str("kind", ks.reg.name).Str("id", act.id).Interface("panic", p).Msg("spots: reentrant handler panicked")
				rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: handler panicked", zerr.ErrHandler, ks.reg.name, act.id)))
			}
		}()
		runTurn(rt, ks, act, act.getState(), d, nil)
		if ks.reg.persist != nil {
			act.dirty.Store(true) // saved by the Spot's next save
		}
	})
	if !ok {
		rt.answer(d.r, &d.h, errorReply(zerr.ErrShuttingDown))
	}
}

// last runs the Spot's last turn (the deactivate hook unless fenced),
// tells the kind actor and stops; calls queued behind it go back to the
// kind actor, which reactivates the Spot for them (or, on a draining
// node, sends them to the new owner). A drain's last turn first waits for
// the replies the Spot is owed (drain.go): it runs again when the last
// one came or the grace ended.
func (a *spotActor) last(c actor.Context, hook bool) {
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
		reg.onDeactivate(a.context(ctx, "", nil), a.state)
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
	if ref := a.ks.ref.Load(); ref != nil {
		_ = ref.Tell(&deactivated{act: a.act})
	}
	c.Poison(c.Self())
}

// MessageFailed ends the call whose handler panicked.
func (a *spotActor) MessageFailed(msg any) {
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
