package spot

import (
	"fmt"
	"net/url"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
	deactivateAll struct {
		stopping bool
		done     chan error
	}
)

// entry is one Spot this kind actor is working on or hosting.
type entry struct {
	state     entryState
	closeSent bool // the deactivate message is in the Spot's mailbox
	act       *activation
	pending   []*delivery // calls waiting for a claim or a release
}

type entryState uint8

const (
	activating entryState = iota
	active
	deactivating
)

// kindActor owns one kind's Spots on this node: it runs claims (on store
// goroutines that report back), spawns and stops Spot actors, sweeps idle
// ones (one sweep per kind, not a timer per Spot) and releases records.
// Concurrent first calls of one Spot wait in one entry and are all served
// by its single activation.
type kindActor struct {
	rt        *runtime
	ks        *kindState
	table     map[string]*entry
	waiters   []*deactivateAll
	lastSweep time.Time
}

var _ actors.FailureHandler = (*kindActor)(nil)

func (a *kindActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.ks.ref.Store(a.rt.n.Actors().Self(c))
	case *actor.Stopping:
		a.failAll(zerr.ErrShuttingDown)
	case *actor.Restarting:
		a.failAll(fmt.Errorf("%w: spot kind %s restarting", zerr.ErrBusy, a.ks.reg.name))
	case *activate:
		a.onActivate(c, msg.d)
	case *claimed:
		a.onClaimed(c, msg)
	case *deactivated:
		a.onDeactivated(c, msg.act)
	case *released:
		a.onReleased(c, msg.id)
	case *tick:
		a.sweep(c, msg.at)
	case *fenceAll:
		a.fence(c, msg.gen)
	case *deactivateAll:
		a.deactivateAll(c, msg)
	}
}

// MessageFailed and MessageDropped end a delivery the kind actor could not
// handle.
func (a *kindActor) MessageFailed(msg any) { a.drop(msg, zerr.ErrBusy) }

func (a *kindActor) MessageDropped(msg any) { a.drop(msg, zerr.ErrShuttingDown) }

func (a *kindActor) drop(msg any, err error) {
	switch m := msg.(type) {
	case *activate:
		a.rt.answer(m.d.r, &m.d.h, errorReply(err))
	case *deactivateAll:
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
		if e.act != nil {
			e.act.closing.Store(true)
			a.ks.dir.remove(e.act)
			if e.state == active {
				a.ks.stats.active.Add(-1)
			}
		}
		delete(a.table, id)
	}
	for _, w := range a.waiters {
		w.done <- err
	}
	a.waiters = nil
}

func (a *kindActor) onActivate(c actor.Context, d *delivery) {
	id := d.h.id
	e := a.table[id]
	if e == nil {
		if _, draining := a.rt.n.PeerReady(a.rt.n.RID()); draining || a.rt.stopping.Load() {
			a.rt.stats.redirects.Add(1)
			a.rt.answer(d.r, &d.h, redirectReply("", 0))
			return
		}
		e = &entry{state: activating}
		a.table[id] = e
		e.pending = append(e.pending, d)
		a.startClaim(c, id)
		return
	}
	if e.state == active {
		select {
		case <-e.act.ref.Done(): // the Spot failed for good: start over
			a.onDeactivated(c, e.act)
			e = a.table[id]
		default:
			if !e.act.closing.Load() {
				a.deliver(e.act, d)
				return
			}
		}
	}
	if e == nil {
		a.onActivate(c, d)
		return
	}
	if int64(len(e.pending)) >= a.ks.reg.maxMessages {
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: %d calls waiting for its activation", zerr.ErrBusy, a.ks.reg.name, id, len(e.pending))))
		return
	}
	e.pending = append(e.pending, d)
}

// deliver hands a delivery to an activation's mailbox.
func (a *kindActor) deliver(act *activation, d *delivery) {
	if act.waitsOn(d.h.chain) {
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: %s/%s is waiting on this call", ErrCycle, a.ks.reg.name, act.id)))
		return
	}
	if err := act.ref.Tell(d); err != nil {
		a.rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot %s/%s: %w", zerr.ErrBusy, a.ks.reg.name, act.id, err)))
	}
}

func (a *kindActor) startClaim(c actor.Context, id string) {
	self := a.rt.n.Actors().Self(c)
	kind := a.ks.reg.name
	if !a.rt.goStore(func() { _ = self.Tell(&claimed{id: id, res: a.rt.claim(kind, id)}) }) {
		a.onClaimed(c, &claimed{id: id, res: claimResult{err: zerr.ErrShuttingDown}})
	}
}

func (a *kindActor) onClaimed(c actor.Context, msg *claimed) {
	e := a.table[msg.id]
	if e == nil || e.state != activating {
		return
	}
	res := msg.res
	var rep []byte
	switch {
	case res.ok:
		if act := a.spawn(c, msg.id, res); act != nil {
			e.state, e.act = active, act
			a.ks.stats.active.Add(1)
			a.ks.stats.activations.Add(1)
			pending := e.pending
			e.pending = nil
			for _, d := range pending {
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
}

func (a *kindActor) spawn(c actor.Context, id string, res claimResult) *activation {
	rt := a.rt
	act := &activation{id: id, seq: rt.actSeq.Add(1), gen: res.gen, epoch: res.epoch}
	act.touch(time.Now())
	reg := a.ks.reg
	ref, err := rt.n.Actors().SpawnChild(c, actors.Spec{
		Name: url.PathEscape(id), Kind: "spot", MaxMessages: reg.maxMessages, MaxBytes: reg.maxBytes,
		Supervisor: supervisor.DefaultConfig(),
		Producer:   func() actor.Actor { return &spotActor{rt: rt, ks: a.ks, act: act} },
	})
	if err != nil {
		rt.log.Error().Err(err).Str("kind", reg.name).Str("id", id).Msg("spots: spawn failed")
		return nil
	}
	act.ref = ref
	return act
}

// onDeactivated: the Spot's actor has run its last turn. Its record is
// released (unless it was fenced: then it is not ours any more); calls that
// arrived meanwhile wait and reactivate it afterwards.
func (a *kindActor) onDeactivated(c actor.Context, act *activation) {
	e := a.table[act.id]
	if e == nil || e.act != act || e.state != active {
		return
	}
	a.ks.dir.remove(act)
	a.ks.stats.active.Add(-1)
	a.ks.stats.deactivations.Add(1)
	e.state = deactivating
	if act.fenced.Load() {
		a.onReleased(c, act.id)
		return
	}
	self := a.rt.n.Actors().Self(c)
	kind := a.ks.reg.name
	if !a.rt.goStore(func() {
		a.rt.release(kind, act)
		_ = self.Tell(&released{id: act.id})
	}) {
		a.onReleased(c, act.id)
	}
}

func (a *kindActor) onReleased(c actor.Context, id string) {
	e := a.table[id]
	if e == nil || e.state != deactivating {
		return
	}
	if len(e.pending) > 0 && !a.rt.stopping.Load() {
		e.state, e.act = activating, nil
		a.startClaim(c, id)
		return
	}
	for _, d := range e.pending {
		a.rt.answer(d.r, &d.h, redirectReply("", 0))
	}
	delete(a.table, id)
	a.checkWaiters()
}

// sweep deactivates the Spots idle for longer than the kind's idle
// timeout: one pass per kind over its table.
func (a *kindActor) sweep(c actor.Context, now time.Time) {
	idle := a.ks.reg.idle
	if now.Sub(a.lastSweep) < min(idle/4, time.Second) {
		return
	}
	a.lastSweep = now
	cut := now.Add(-idle).UnixNano()
	for _, e := range a.table {
		switch {
		case e.state != active:
		case e.act.closing.Load():
			a.close(c, e, e.act.fenced.Load()) // a deactivate that did not fit yet
		case e.act.lastUsed.Load() < cut && e.act.turn.Load() == 0 && e.act.ref.Quota().Stats().Depth == 0:
			a.close(c, e, false)
		}
	}
}

// close starts the deactivation of e's activation: new calls go through
// this actor from now on; the Spot runs what it has queued, then its last
// turn. A full mailbox is retried on the next sweep.
func (a *kindActor) close(c actor.Context, e *entry, fenced bool) {
	act := e.act
	act.closing.Store(true)
	if fenced {
		act.fenced.Store(true)
	}
	if e.closeSent {
		return
	}
	select {
	case <-act.ref.Done(): // failed for good: nothing will answer
		a.onDeactivated(c, act)
		return
	default:
	}
	e.closeSent = act.ref.Tell(&deactivate{}) == nil
}

// fence ends every activation of lease generation gen without releasing
// its record (R1: the lease is gone, the records are not ours).
func (a *kindActor) fence(c actor.Context, gen uint64) {
	for _, e := range a.table {
		if e.state == active && e.act.gen == gen {
			a.rt.stats.fenced.Add(1)
			a.close(c, e, true)
		}
	}
}

func (a *kindActor) deactivateAll(c actor.Context, msg *deactivateAll) {
	for _, e := range a.table {
		if e.state == active && !e.act.closing.Load() {
			a.close(c, e, false)
		}
	}
	a.waiters = append(a.waiters, msg)
	a.checkWaiters()
}

// checkWaiters answers deactivateAll once nothing is active.
func (a *kindActor) checkWaiters() {
	if len(a.waiters) == 0 {
		return
	}
	for _, e := range a.table {
		if e.state == active || e.state == deactivating {
			return
		}
	}
	for _, w := range a.waiters {
		w.done <- nil
	}
	a.waiters = nil
}
