package spot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// Moving a Spot to another Object Server without caller errors:
//
//  1. The owner's kind actor stops admitting for the Spot: new calls wait
//     in its entry (state moving) while the Spot finishes what it queued.
//  2. The target is asked to prepare (flagPrepare): it holds the calls that
//     reach it directly from now on, and answers its lease generation.
//  3. The Spot's last turn saves its state (a fenced write) and transfers
//     the record to the target with a new epoch (compare-and-set).
//  4. The target is told to adopt (flagAdopt): it claims the record it now
//     holds (a new epoch again, in its own acknowledged write) and restores
//     the state.
//  5. The previous owner forwards the calls that waited (flagHandoff), in
//     order, relaying their answers, then an end marker (flagEnd); the
//     target runs the forwarded calls first, then the ones it held. All of
//     it travels on one connection in order, so each caller's order holds.
//  6. Calls that reach the previous owner later are redirected.
//
// A failure before the transfer aborts the move (flagAbort) and the Spot
// goes on where it was. Moving needs a persistent kind (the state travels
// through the store).

// Messages of the move.
type (
	moveOut struct {
		id, to string
		wait   time.Duration // for the Spot's open requests (waitOpen)
		done   chan error
	}
	// moveDone: the mover goroutine's outcome (the kind actor resumes or
	// forwards).
	moveDone struct {
		id   string
		act  *activation
		to   string
		err  error      // nil: transferred
		done chan error // Move's caller
	}
	// handoff asks the Spot for its last turn of a move.
	handoff struct {
		to     string
		gen    uint64
		done   chan error
		timers []byte // set with a nil done: the Spot's timers, for the target
	}
)

// moveWait bounds how long a target holds direct calls for a move's
// forwarded ones.
func (rt *runtime) moveWait() time.Duration { return 2*rt.cfg.StoreTimeout + time.Second }

// openWait is how long a move waits for the requests its Spot left open
// (Defer): the store's step bound (moveWait), or half of what is left of
// the move's own deadline when that is shorter — the move itself needs the
// rest.
func (rt *runtime) openWait(ctx context.Context) time.Duration {
	w := rt.moveWait()
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)/2)
	}
	return max(w, 0)
}

// forwardFor is how long a previous owner forwards what still reaches it
// (instead of redirecting): long enough for one-way messages a caller has
// in flight to arrive behind the ones forwarded before, short because every
// call meanwhile takes two hops.
const forwardFor = time.Second

// Move moves the Spot (kind, id), active on node n, to the Object Server
// to, without an error to any caller (see docs/spots.md). The kind must be
// persistent. It returns nil once the record names the target and the
// calls that waited are on their way to it (the target activates the Spot
// right after, holding the calls that reach it meanwhile), or why it did
// not move (the Spot then goes on where it was).
func Move(ctx context.Context, n *routemesh.Node, kind, id, to string) error {
	rt, err := of(n)
	if err != nil {
		return err
	}
	ks := rt.kinds[kind]
	if ks == nil {
		return fmt.Errorf("%w: %s", ErrUnknownKind, kind)
	}
	return rt.move(ctx, ks, id, to)
}

func (rt *runtime) move(ctx context.Context, ks *kindState, id, to string) error {
	if ks.reg.persist == nil {
		return fmt.Errorf("%w: kind %s is not persistent: its Spots cannot move (Persist)", ErrConfig, ks.reg.name)
	}
	if to == rt.n.RID() {
		return fmt.Errorf("%w: %s is this node", ErrNoTarget, to)
	}
	if !rt.hostsKind(to, ks.reg.name) {
		return fmt.Errorf("%w: %w: %s does not host kind %s", ErrNoTarget, ErrUnknownKind, to, ks.reg.name)
	}
	ref := ks.ref.Load()
	if ref == nil {
		return fmt.Errorf("%w: spots restarting", zerr.ErrBusy)
	}
	done := make(chan error, 1)
	if err := ref.TellControl(&moveOut{id: id, to: to, wait: rt.openWait(ctx), done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("move %s/%s: %w", ks.reg.name, id, ctx.Err())
	}
}

// onMoveOut starts a move of an active Spot.
func (a *kindActor) onMoveOut(c *actors.Context, m *moveOut) {
	act := a.ks.dir.get(m.id)
	if act == nil || act.closing.Load() || a.table[m.id] != nil {
		m.done <- fmt.Errorf("%w: %s/%s is not active on %s", ErrNoTarget, a.ks.reg.name, m.id, a.rt.n.RID())
		return
	}
	a.ks.dir.setClosing(act) // new calls wait in the entry
	a.table[m.id] = &entry{state: moving, act: act, to: m.to, since: time.Now()}
	self := c.Self()
	if !a.rt.goStore(func() { a.rt.mover(self, a.ks, act, m) }) {
		a.onMoveDone(c, &moveDone{id: m.id, act: act, err: zerr.ErrShuttingDown, done: m.done})
	}
}

// mover runs the owner's side of a move on its own goroutine: everything
// it sends to the target goes out in order from here.
func (rt *runtime) mover(kindRef interface{ TellControl(any) error }, ks *kindState, act *activation, m *moveOut) {
	kind, id, to := ks.reg.name, act.id, m.to
	fail := func(err error, abort bool) {
		if abort {
			rt.control(to, kind, id, flagAbort)
		}
		_ = kindRef.TellControl(&moveDone{id: id, act: act, to: to, err: err, done: m.done})
	}
	// 1b. the requests the Spot left open get their answers first (the
	// calls that wait in the entry meanwhile are not its turns).
	rt.waitOpen(act, m.wait)
	// 2. prepare
	var timers []byte // the Spot's timers, encoded by its last turn
	ctx, cancel := context.WithTimeout(rt.base, rt.moveWait())
	out, err := rt.n.CallNode(ctx, to, packetSpot, (&header{flags: flagPrepare, kind: kind, id: id}).encode())
	cancel()
	if err == nil {
		var rep reply
		if rep, err = decodeReply(out); err == nil && rep.status != stOK {
			err = fmt.Errorf("%w: %s does not take %s/%s", ErrNoTarget, to, kind, id)
			if rep.status == stError {
				err = rep.err()
			}
		}
		if err == nil {
			gen, n := binary.Uvarint(rep.body)
			if n <= 0 || gen == 0 {
				err = errMalformed
			}
			// 3. the Spot's last turn: save, transfer.
			if err == nil {
				hd := &handoff{to: to, gen: gen, done: make(chan error, 1)}
				if err = act.ref.Tell(hd); err == nil {
					err = <-hd.done
				}
				timers = hd.timers
			}
		}
	}
	if err != nil {
		fail(fmt.Errorf("move %s/%s to %s: %w", kind, id, to, err), true)
		return
	}
	// 4. adopt; 5. the kind actor forwards the waiting calls and ends.
	// Every submission to the target is non-blocking and in order: this
	// one first, then the kind actor's.
	rt.controlBody(to, kind, id, flagAdopt, timers)
	_ = kindRef.TellControl(&moveDone{id: id, act: act, to: to, done: m.done})
}

// control sends a move's one-way control message to the target.
func (rt *runtime) control(to, kind, id string, flag uint8) {
	rt.controlBody(to, kind, id, flag, nil)
}

// controlBody is control with a body (adopt: the Spot's timers).
func (rt *runtime) controlBody(to, kind, id string, flag uint8, body []byte) {
	ctx, cancel := context.WithTimeout(rt.base, time.Second)
	_ = rt.n.SendNode(ctx, to, packetSpot, (&header{flags: flag, kind: kind, id: id, body: body}).encode())
	cancel()
}

// forward relays one waiting call to the new owner (flagHandoff) and its
// answer back to the caller. The request is submitted here, in order; the
// answer is awaited elsewhere.
//
// A one-way message is forwarded as a request (flagSendAsCall), so that
// done runs once it has run there: a node that forwarded messages of a
// Spot and then takes the Spot back waits for them before it runs the
// calls it held, or they could come back after them.
func (rt *runtime) forward(to string, d *delivery, done func()) {
	h := d.h
	h.flags |= flagHandoff
	timeout := time.Until(d.r.Deadline)
	if d.r.OneWay {
		h.flags |= flagSendAsCall
		timeout = routemesh.DefaultRequestTimeout
		d.r.Reply(nil) // the sender is done: nothing goes back
	}
	if timeout <= 0 {
		d.r.Fail(zerr.ErrTimeout)
		done()
		return
	}
	f := rt.n.CallNodeFuture(to, packetSpot, h.encode(), timeout)
	if !rt.goStore(func() {
		out, err := f.Wait(context.Background())
		done()
		if d.r.OneWay {
			if err != nil {
				rt.stats.sendsDropped.Add(1)
			}
			return
		}
		if err != nil {
			d.r.Fail(err)
			return
		}
		if rep, err := decodeReply(out); err == nil && rep.status == stOK && rep.owner == "" {
			out = routedReply(to, rep.epoch, rep.body) // say who ran it
		}
		d.r.Reply(out)
	}) {
		d.r.Fail(zerr.ErrShuttingDown)
		done()
	}
}

// forwardDone: a call this node forwarded for a Spot has ended.
type forwardDone struct{ id string }

// forwardFrom forwards d for the kind actor, counting it in flight until
// it ends.
func (a *kindActor) forwardFrom(c *actors.Context, to string, d *delivery) {
	id := d.h.id
	a.inflight[id]++
	self := c.Self()
	a.rt.forward(to, d, func() { _ = self.TellControl(&forwardDone{id: id}) })
}

// onForwardDone settles a Spot that came back here once the calls this
// node had forwarded for it have ended.
func (a *kindActor) onForwardDone(id string) {
	if a.inflight[id]--; a.inflight[id] <= 0 {
		delete(a.inflight, id)
		if e := a.table[id]; e != nil && e.state == adopted && e.ended {
			a.settle(e, id)
		}
	}
}

// onMoveDone: the mover's outcome on the owner.
func (a *kindActor) onMoveDone(c *actors.Context, m *moveDone) {
	e := a.table[m.id]
	if m.err != nil {
		// Not transferred: the Spot goes on here with the calls that waited.
		if m.act.ref != nil {
			m.act.closing.Store(false)
		}
		if e != nil && e.state == moving {
			delete(a.table, m.id)
			for _, d := range e.pending {
				a.deliver(m.act, d)
			}
		}
		if a.closingAll && a.ks.dir.get(m.id) == m.act && !m.act.closing.Load() {
			a.close(c, m.act, false) // mid-drain: deactivated here instead
		}
		m.done <- m.err
		return
	}
	// Transferred: the activation is over here (no release: the record is
	// the target's); the waiting calls go to the mover, later ones are
	// redirected. (A fence may have ended it here meanwhile: counted then.)
	if a.ks.dir.get(m.id) == m.act {
		a.ks.dir.remove(m.act)
		a.rt.incs.detach(m.act.inc)
		a.ks.stats.active.Add(-1)
		a.ks.stats.deactivations.Add(1)
	}
	a.rt.cache.put(a.ks.reg.name, m.id, m.to)
	if e == nil {
		e = &entry{}
		a.table[m.id] = e
	}
	pending := e.pending
	*e = entry{state: moved, to: m.to, since: time.Now()}
	for _, d := range pending { // in order, on the one connection
		a.forwardFrom(c, m.to, d)
	}
	a.rt.control(m.to, a.ks.reg.name, m.id, flagEnd)
	a.rt.stats.moves.Add(1)
	m.done <- nil
	a.checkWaiters()
}

// moveDelivery handles a call for a Spot with a move entry; it reports
// false when the call takes the usual way.
func (a *kindActor) moveDelivery(c *actors.Context, e *entry, d *delivery) bool {
	handoff := d.h.flags&flagHandoff != 0
	switch e.state {
	case moved:
		if !a.rt.reachable(e.to) {
			// The new owner is gone: the usual way (a claim waits out its
			// lease) instead of forwarding into the void.
			delete(a.table, d.h.id)
			return false
		}
		// Forwarded (also a call forwarded here by an earlier owner), not
		// redirected, for a while: a caller that learned the
		// new owner now would send its next calls there directly, ahead of
		// its one-way messages still being forwarded from here.
		a.forwardFrom(c, e.to, d)
		return true
	case receiving, adopting:
		if handoff {
			e.handoff = append(e.handoff, d)
		} else {
			e.pending = append(e.pending, d)
		}
		return true
	case adopted:
		if handoff {
			a.deliver(e.act, d)
		} else {
			e.pending = append(e.pending, d)
		}
		return true
	}
	return false
}

// lastForMove is the Spot's side of a move: after everything it had
// queued, save the state and transfer the record to the target.
func (a *spotActor) lastForMove(c *actors.Context, m *handoff) {
	rt, reg := a.rt, a.ks.reg
	if a.gone {
		m.done <- fmt.Errorf("%w: the Spot is gone", ErrNoTarget)
		return
	}
	a.dirty = true // the snapshot travels through the store: write it now
	if err := a.save(); err != nil {
		if errors.Is(err, errSaveFailed) {
			err = fmt.Errorf("%w: %w", zerr.ErrBusy, err) // the move did not happen
		}
		m.done <- err
		return
	}
	if !rt.valid(a.act, time.Now()) {
		m.done <- fmt.Errorf("%w: lease not valid", ErrFenced)
		return
	}
	from := location.Ownership{Mesh: rt.n.Mesh(), Kind: reg.name, ID: a.act.id, OwnerRID: rt.n.RID(), OwnerGeneration: a.act.gen, Epoch: a.act.epoch}
	ctx, cancel := rt.storeCtx()
	_, err := rt.dir.TransferSpot(ctx, from, m.to, m.gen)
	cancel()
	if err != nil {
		if errors.Is(err, location.ErrFenced) {
			rt.stats.overlaps.Add(1)
		}
		m.done <- fmt.Errorf("transfer: %w", err)
		return
	}
	a.gone = true
	a.act.fenced.Store(true) // not ours any more: no hook, no release
	a.abandon()              // replies to its asynchronous calls do not move with it
	m.timers = a.encodeTimers()
	rt.clock.cancelAll(a.act)
	rt.endOpen(a.act, "the Spot moved")
	c.Poison()
	m.done <- nil
}
