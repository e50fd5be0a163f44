package spot

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/supervisor"
)

// Messages of a kind actor.
type (
	activate struct{ d *delivery }
	claimed  struct {
		id  string
		res claimResult
	}
	deactivated   struct{ act *activation }
	released      struct{ id string }
	fenceAll      struct{ gen uint64 }
	fenceInc      struct{ s *incState }
	deactivateAll struct {
		stopping bool
		grace    time.Time // a drain's: until when its Spots take owed replies (drain.go)
		done     chan error
	}
)

// entry is a Spot this kind actor is working on: claiming, closing or
// releasing. An active Spot that is not closing has no entry: it is only in
// the kind's directory (its activation), which keeps an idle Spot small.
type entry struct {
	state   entryState
	act     *activation // closing, deactivating, moving, adopted
	pending []*delivery // calls waiting for a claim or a release
	// Moves: handoff holds forwarded calls until the adopted activation
	// runs; to is where a moved Spot went; since bounds how long a move
	// entry waits; ended says the previous owner sent its last call.
	handoff []*delivery
	timers  []byte // adopting: the moved Spot's timers, encoded
	to      string
	from    string // receiving: the previous owner
	since   time.Time
	ended   bool
}

type entryState uint8

const (
	activating   entryState = iota
	closing                 // active, its last turn is coming: new calls wait here
	deactivating            // past its last turn, the record is being released
	moving                  // active, being handed to another node: new calls wait here
	moved                   // handed to e.to: new calls are redirected there
	receiving               // a move to this node is prepared: direct calls wait here
	adopting                // receiving, the claim is running
	adopted                 // active here, the previous owner's forwarded calls still come
)

// kindActor owns one kind's Spots on this node: it runs claims (on store
// goroutines that report back), spawns and stops Spot actors, sweeps idle
// ones (one sweep per kind, not a timer per Spot) and releases records.
// Concurrent first calls of one Spot wait in one entry and are all served
// by its single activation. It is the only writer of the kind's directory.
type kindActor struct {
	rt        *runtime
	ks        *kindState
	table     map[string]*entry
	inflight  map[string]int // calls forwarded per Spot and not ended yet
	waiters   []*deactivateAll
	lastSweep time.Time
	// closingAll: a drain or a stop deactivates every Spot of the kind,
	// also those that become active later (drain.go).
	closingAll bool
}

var _ actors.FailureHandler = (*kindActor)(nil)

func (a *kindActor) Receive(c *actors.Context) {
	switch msg := c.Message().(type) {
	case *actors.Started:
		a.ks.ref.Store(c.Self())
	case *actors.Stopping:
		a.failAll(zerr.ErrShuttingDown)
	case *actors.Restarting:
		a.failAll(fmt.Errorf("%w: spot kind %s restarting", zerr.ErrBusy, a.ks.reg.name))
	case *activate:
		a.onActivate(c, msg.d)
		a.ks.dir.slowDone(msg.d.h.id) // queued (or ended): later calls may go straight
	case *claimed:
		a.onClaimed(c, msg)
	case *deactivated:
		a.onDeactivated(c, msg.act)
	case *released:
		a.onReleased(c, msg.id)
	case *tick:
		a.drainTick(c, msg.at)
		a.sweep(c, msg.at)
	case *fenceAll:
		a.fence(c, msg.gen)
	case *fenceInc:
		a.fenceInc(c, msg.s)
	case *staleSpot:
		if a.ks.dir.get(msg.act.id) == msg.act {
			a.rt.fenced(a.ks.reg.name, msg.act.id, "a state write found the record moved on")
			a.close(c, msg.act, true)
		}
	case *deactivateAll:
		a.deactivateAll(c, msg)
	case *moveOut:
		a.onMoveOut(c, msg)
	case *moveDone:
		a.onMoveDone(c, msg)
	case *forwardDone:
		a.onForwardDone(msg.id)
	}
}

// MessageFailed and MessageDropped end a delivery the kind actor could not
// handle.
func (a *kindActor) MessageFailed(msg any) { a.drop(msg, zerr.ErrBusy) }

func (a *kindActor) MessageDropped(msg any) { a.drop(msg, zerr.ErrShuttingDown) }

func (a *kindActor) drop(msg any, err error) {
	switch m := msg.(type) {
	case *activate:
		a.ks.dir.slowDone(m.d.h.id)
		a.rt.answer(m.d.r, &m.d.h, errorReply(err))
	case *deactivateAll:
		m.done <- err
	case *moveOut:
		m.done <- err
	}
}

// failAll ends every waiting call: this incarnation is going away. Active
// Spots stop with it (they are its children); the directory forgets them.
func (a *kindActor) failAll(err error) {
	for id, e := range a.table {
		for _, d := range e.pending {
			a.rt.answer(d.r, &d.h, errorReply(err))
		}
		delete(a.table, id)
	}
	for _, act := range a.ks.dir.all() {
		act.closing.Store(true)
		a.ks.dir.remove(act)
	}
	a.ks.stats.active.Store(0)
	for _, w := range a.waiters {
		w.done <- err
	}
	a.waiters = nil
}

func (a *kindActor) onActivate(c *actors.Context, d *delivery) {
	id := d.h.id
	if d.h.flags&flagsControl != 0 {
		a.onMoveControl(c, d)
		return
	}
	if e := a.table[id]; e != nil && a.moveDelivery(c, e, d) {
		return
	}
	if e := a.table[id]; e != nil {
		if int64(len(e.pending)) >= a.ks.reg.maxMessages {
			a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: %d calls waiting for its activation", zerr.ErrBusy, a.ks.reg.name, id, len(e.pending))))
			return
		}
		e.pending = append(e.pending, d)
		return
	}
	if act := a.ks.dir.get(id); act != nil {
		select {
		case <-act.ref.Done(): // the Spot failed for good: start over
			a.ended(c, act)
			a.onActivate(c, d)
		default:
			a.deliver(act, d)
		}
		return
	}
	if a.refusing() {
		a.redirect(d) // a draining node activates nothing new
		return
	}
	a.table[id] = &entry{state: activating, pending: []*delivery{d}}
	a.startClaim(c, id)
}

// deliver hands a delivery to an activation's mailbox.
func (a *kindActor) deliver(act *activation, d *delivery) {
	if act.waitsOn(d.h.chain) {
		if a.ks.reg.reentrant {
			a.rt.reenter(a.ks, act, d)
			return
		}
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: %s/%s is waiting on this call", ErrCycle, a.ks.reg.name, act.id)))
		return
	}
	if err := act.ref.Tell(d); err != nil {
		if errors.Is(err, actors.ErrStopped) {
			// Its last turn has run and its deactivation is on the way:
			// the call waits for it and goes to the next activation.
			a.ks.dir.setClosing(act)
			e := a.table[act.id]
			if e == nil {
				e = &entry{state: closing, act: act}
				a.table[act.id] = e
			}
			e.pending = append(e.pending, d)
			return
		}
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: %w", zerr.ErrBusy, a.ks.reg.name, act.id, err)))
	}
}

func (a *kindActor) startClaim(c *actors.Context, id string) {
	self := c.Self()
	kind := a.ks.reg.name
	if !a.rt.goStore(func() { _ = self.TellControl(&claimed{id: id, res: a.rt.claim(kind, id)}) }) {
		a.onClaimed(c, &claimed{id: id, res: claimResult{err: zerr.ErrShuttingDown}})
	}
}

func (a *kindActor) onClaimed(c *actors.Context, msg *claimed) {
	e := a.table[msg.id]
	if e != nil && e.state == adopting {
		a.onAdopted(c, e, msg)
		return
	}
	if e == nil || e.state != activating {
		return
	}
	res := msg.res
	var rep []byte
	if res.ok && !a.rt.lease.valid(res.gen, time.Now()) {
		// Claimed under a lease generation that was fenced meanwhile: the
		// fence has passed this Spot by, so it must not start.
		res = claimResult{retry: "the ownership lease changed during the claim"}
	}
	switch {
	case res.ok && a.refusing():
		// Claimed while this node began to drain or stop: it activates
		// nothing new. The record goes back at once; the calls that waited
		// go to the owner placement picks (onReleased).
		e.state, e.act = deactivating, &activation{id: msg.id, gen: res.gen, epoch: res.epoch}
		a.release(c, e.act)
		return
	case res.ok:
		if act := a.spawn(c, msg.id, res); act != nil {
			delete(a.table, msg.id)
			a.ks.stats.active.Add(1)
			a.ks.stats.activations.Add(1)
			for _, d := range e.pending {
				a.deliver(act, d)
			}
			// Published after the waiting calls are queued, so a call that
			// arrives now cannot overtake them (FIFO per caller).
			a.ks.dir.put(act)
			return
		}
		rep = retryReply("spot actor could not start")
	case res.owner != "":
		a.rt.stats.redirects.Add(1)
		rep = redirectReply(res.owner, 0)
	case res.retry != "":
		rep = retryReply(res.retry)
	default:
		rep = errorReply(fmt.Errorf("%w: spot %s/%s: location store: %w", zerr.ErrBusy, a.ks.reg.name, msg.id, res.err))
	}
	for _, d := range e.pending {
		a.rt.answer(d.r, &d.h, rep)
	}
	delete(a.table, msg.id)
	a.checkWaiters()
}

func (a *kindActor) spawn(c *actors.Context, id string, res claimResult) *activation {
	rt := a.rt
	act := &activation{id: id, seq: rt.actSeq.Add(1), gen: res.gen, epoch: res.epoch, pre: res.pre}
	if a.ks.reg.reentrant {
		act.re = &reentry{}
	}
	if res.inc != "" {
		act.inc = rt.incs.attach(res.inc, a.ks.reg.name, id, res.sent)
	}
	act.touch(time.Now())
	reg := a.ks.reg
	ref, err := c.Spawn(actors.Spec{
		Name: url.PathEscape(id), Kind: "spot", MaxMessages: reg.maxMessages, MaxBytes: reg.maxBytes,
		Supervisor: supervisor.DefaultConfig(), Compact: true, Pooled: true,
		Producer: func() actors.Actor { return &spotActor{rt: rt, ks: a.ks, act: act} },
	})
	if err != nil {
		rt.incs.detach(act.inc)
		rt.log.Error().Err(err).Str("kind", reg.name).Str("id", id).Msg("spots: spawn failed")
		return nil
	}
	act.ref = ref
	return act
}

// onDeactivated: the Spot's actor has run its last turn.
func (a *kindActor) onDeactivated(c *actors.Context, act *activation) {
	if a.ks.dir.get(act.id) != act {
		return
	}
	a.ended(c, act)
}

// ended takes act out of the directory and releases its record (unless it
// was fenced: then it is not ours any more); calls that arrived meanwhile
// wait and reactivate the Spot afterwards — on a draining or stopping node
// they go to the owner placement picks instead.
func (a *kindActor) ended(c *actors.Context, act *activation) {
	a.ks.dir.remove(act)
	a.rt.clock.cancelAll(act) // however it ended, its timers end with it
	a.rt.incs.detach(act.inc)
	a.ks.stats.active.Add(-1)
	a.ks.stats.deactivations.Add(1)
	e := a.table[act.id]
	if e == nil {
		e = &entry{}
		a.table[act.id] = e
	}
	e.state, e.act = deactivating, act
	if act.fenced.Load() {
		a.onReleased(c, act.id)
		return
	}
	a.release(c, act)
}

// release gives act's record back on a store goroutine; released follows.
func (a *kindActor) release(c *actors.Context, act *activation) {
	self := c.Self()
	kind := a.ks.reg.name
	if !a.rt.goStore(func() {
		a.rt.release(kind, act)
		_ = self.TellControl(&released{id: act.id})
	}) {
		a.onReleased(c, act.id)
	}
}

func (a *kindActor) onReleased(c *actors.Context, id string) {
	e := a.table[id]
	if e == nil || e.state != deactivating {
		return
	}
	if len(e.pending) > 0 && !a.refusing() {
		e.state, e.act = activating, nil
		a.startClaim(c, id)
		return
	}
	for _, d := range e.pending {
		a.redirect(d) // draining or stopping: not claimed here again
	}
	delete(a.table, id)
	a.checkWaiters()
}

// sweep deactivates the Spots idle for longer than the kind's idle
// timeout (one pass per kind over its directory) and resends last-turn
// requests that did not fit a full mailbox.
func (a *kindActor) sweep(c *actors.Context, now time.Time) {
	idle := a.ks.reg.idle
	every := min(idle/4, time.Second)
	if p := a.ks.reg.persist; p != nil && p.Interval > 0 {
		every = min(every, p.Interval/2)
	}
	if now.Sub(a.lastSweep) < every {
		return
	}
	a.lastSweep = now
	cut := now.Add(-idle).UnixNano()
	var close, save []*activation
	var saveCut int64
	if p := a.ks.reg.persist; p != nil && p.Interval > 0 {
		saveCut = now.Add(-p.Interval).UnixNano()
	}
	a.ks.dir.each(func(act *activation) {
		if saveCut != 0 && act.dirty.Load() && act.saved.Load() < saveCut {
			save = append(save, act)
		}
		if e := a.table[act.id]; e != nil && e.state == moving {
			return // its move decides
		}
		if act.closing.Load() {
			if !act.closeSent {
				close = append(close, act)
			}
			return
		}
		if act.lastUsed.Load() < cut && act.turn.Load() == 0 && act.openN.Load() == 0 && act.ref.Quota().Stats().Depth == 0 {
			close = append(close, act)
		}
	})
	for _, act := range close {
		a.close(c, act, act.fenced.Load())
	}
	a.expireMoves(c, now)
	for _, act := range save {
		_ = act.ref.Tell(&checkpoint{}) // a full mailbox: the next sweep
	}
}

// close starts the deactivation of act: new calls wait in this actor
// from now on; the Spot runs what it has queued, then its last turn. A full
// mailbox is retried on the next sweep.
func (a *kindActor) close(c *actors.Context, act *activation, fenced bool) {
	a.ks.dir.setClosing(act)
	if fenced {
		act.fenced.Store(true)
	}
	if a.table[act.id] == nil {
		a.table[act.id] = &entry{state: closing, act: act}
	}
	if act.closeSent {
		return
	}
	select {
	case <-act.ref.Done(): // failed for good: nothing will answer
		a.ended(c, act)
		return
	default:
	}
	act.closeSent = act.ref.TellControl(&deactivate{}) == nil
}

// fence ends every activation of lease generation gen without releasing
// its record (R1: the lease is gone, the records are not ours).
func (a *kindActor) fence(c *actors.Context, gen uint64) {
	for _, act := range a.ks.dir.all() {
		if act.gen == gen {
			a.rt.fenced(a.ks.reg.name, act.id, "the ownership lease was lost")
			a.close(c, act, true)
		}
	}
}

// fenceInc ends every activation claimed in a store shard incarnation
// that is gone or unconfirmed (rule C), without releasing its record.
func (a *kindActor) fenceInc(c *actors.Context, s *incState) {
	for _, act := range a.ks.dir.all() {
		if act.inc == s {
			a.rt.fenced(a.ks.reg.name, act.id, "the store shard that took its claim failed over or restarted")
			a.close(c, act, true)
		}
	}
}

func (a *kindActor) deactivateAll(c *actors.Context, msg *deactivateAll) {
	a.closingAll = true
	var grace int64 // a stop cuts a drain's grace short
	if !msg.stopping && !msg.grace.IsZero() {
		grace = msg.grace.UnixNano()
	}
	a.ks.grace.Store(grace)
	for _, act := range a.ks.dir.all() {
		if !act.closing.Load() {
			a.close(c, act, false)
		}
	}
	a.waiters = append(a.waiters, msg)
	a.checkWaiters()
}

// checkWaiters answers deactivateAll once nothing is active or being
// released — for a drain, also nothing being claimed or on its way here
// by a move (a stop does not wait for those).
func (a *kindActor) checkWaiters() {
	if len(a.waiters) == 0 || a.ks.dir.len() > 0 {
		return
	}
	settled := true
	for _, e := range a.table {
		switch e.state {
		case moved:
		case activating, receiving:
			settled = false
		default:
			return
		}
	}
	kept := a.waiters[:0]
	for _, w := range a.waiters {
		if settled || w.stopping {
			w.done <- nil
			continue
		}
		kept = append(kept, w)
	}
	clear(a.waiters[len(kept):])
	a.waiters = kept
}

// Size is what a call waiting for an activation counts against the kind
// actor's byte budget.
func (m *activate) Size() int { return m.d.Size() }
