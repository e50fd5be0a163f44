package spot

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
)

// The target's side of a move: prepare, adopt, end and abort, the
// deliveries held meanwhile, and moves that never finished.

// onMoveControl handles prepare, adopt, end and abort on the target.
func (a *kindActor) onMoveControl(c *actors.Context, d *delivery) {
	id, rt := d.h.id, a.rt
	e := a.table[id]
	switch {
	case d.h.flags&flagPrepare != 0:
		gen, valid := rt.lease.holder(time.Now())
		_, draining := rt.n.PeerReady(rt.n.RID())
		switch {
		case !valid || draining || rt.stopping.Load():
			rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: %s takes no Spot now", ErrNoTarget, rt.n.RID())))
		case e != nil && e.state == moved:
			// It comes back: forget where it went.
			delete(a.table, id)
			a.table[id] = &entry{state: receiving, from: d.r.From, since: time.Now()}
			rt.answer(d.r, &d.h, okReply(0, binary.AppendUvarint(nil, gen)))
		case e != nil || a.ks.dir.get(id) != nil:
			rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: %s/%s is busy on %s", zerr.ErrBusy, a.ks.reg.name, id, rt.n.RID())))
		default:
			a.table[id] = &entry{state: receiving, from: d.r.From, since: time.Now()}
			rt.answer(d.r, &d.h, okReply(0, binary.AppendUvarint(nil, gen)))
		}
		return
	case d.h.flags&flagAdopt != 0:
		if e != nil && e.state == receiving {
			e.state = adopting
			e.timers = append([]byte(nil), d.h.body...)
			a.startClaim(c, id)
		}
	case d.h.flags&flagEnd != 0:
		if e != nil {
			e.ended = true
			if e.state == adopted && a.inflight[id] == 0 {
				a.settle(e, id)
			}
		}
	case d.h.flags&flagAbort != 0:
		if e != nil && e.state == receiving {
			a.unhold(c, e, id)
		}
	}
	d.r.Reply(nil)
}

// onAdopted: the target's claim of a moved Spot came back.
func (a *kindActor) onAdopted(c *actors.Context, e *entry, msg *claimed) {
	res := msg.res
	if res.ok && !a.rt.lease.valid(res.gen, time.Now()) {
		res = claimResult{retry: "the ownership lease changed during the claim"}
	}
	var act *activation
	if res.ok {
		act = a.spawn(c, msg.id, res)
	}
	if act == nil {
		// Could not take it: the calls go the usual way (a new claim).
		a.rt.log.Warn().Str("kind", a.ks.reg.name).Str("id", msg.id).Msg("spots: a moved Spot could not be adopted")
		a.unhold(c, e, msg.id)
		return
	}
	a.ks.stats.active.Add(1)
	a.ks.stats.activations.Add(1)
	e.state, e.act = adopted, act
	if len(e.timers) > 0 {
		// Before the forwarded calls: the timers are the Spot's first message.
		_ = act.ref.TellControl(&restoreTimers{data: e.timers})
		e.timers = nil
	}
	for _, d := range e.handoff {
		a.deliver(act, d)
	}
	e.handoff = nil
	if e.ended && a.inflight[msg.id] == 0 {
		a.settle(e, msg.id)
	}
}

// settle ends a target's move entry: the calls it held run after the
// forwarded ones, and the Spot is reachable directly from now on.
func (a *kindActor) settle(e *entry, id string) {
	delete(a.table, id)
	for _, d := range e.pending {
		a.deliver(e.act, d)
	}
	a.ks.dir.put(e.act)
}

// unhold drops a target's move entry that will not become an activation:
// its calls take the usual way.
func (a *kindActor) unhold(c *actors.Context, e *entry, id string) {
	delete(a.table, id)
	for _, d := range append(e.handoff, e.pending...) {
		d.h.flags &^= flagHandoff
		a.onActivate(c, d)
	}
}

// expireMoves ends move entries that waited too long: a target whose
// previous owner never sent its end marker (it died) settles; one never
// told to adopt gives up; an owner forgets where a Spot went.
func (a *kindActor) expireMoves(c *actors.Context, now time.Time) {
	limit := a.rt.moveWait()
	for id, e := range a.table {
		sourceGone := (e.state == receiving || e.state == adopted) && e.from != "" && !a.rt.reachable(e.from)
		if d := now.Sub(e.since); d < limit && (e.state != moved || d < forwardFor) && !sourceGone {
			continue
		}
		switch e.state {
		case adopted:
			a.settle(e, id)
		case receiving:
			a.unhold(c, e, id)
		case moved:
			delete(a.table, id)
		}
	}
}
