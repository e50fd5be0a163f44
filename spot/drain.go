package spot

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// Draining a node's Spots (Node.Drain, runtime.Drain):
//
//  1. The node is draining: it activates nothing new. A first call, and
//     every call that waited for a Spot being deactivated here, is
//     redirected to the owner placement picks (never this node).
//  2. The Spots of persistent kinds are moved to that owner
//     (handOffAll).
//  3. Every kind actor deactivates what is still active here — the kinds
//     without persistence, and the Spots whose move failed — and, until
//     the drain ends, also what becomes active later (a move prepared
//     before the drain, adopted here; a claim that was running when the
//     drain began gives its record back at once instead). It answers once
//     none of its Spots is active, claimed or on its way here.
//
// A Spot deactivated by the drain still takes, as turns, the replies to
// the asynchronous calls its turns started, until the grace ends (half the
// drain timeout); its last turn (OnDeactivate, the last save) comes after
// them. The replies still owed then are dropped and counted
// (Stats.AsyncAbandoned). Calls for the Spot wait in the kind actor
// meanwhile and go to the new owner once the record is released.

// drainMarks are an activation's part of a drain (leaf atomics, small:
// every activation has them).
type drainMarks struct {
	owed atomic.Int32 // replies to asynchronous calls its turns started, not taken yet
	// winding: the Spot is past its last turn's start and waits for owed
	// replies (written by its actor; the kind actor reads it to end the
	// wait).
	winding atomic.Bool
}

// owe counts an asynchronous call about to start; started takes the count
// back when the start failed (then no reply follows) and returns err.
func (m *drainMarks) owe() { m.owed.Add(1) }

func (m *drainMarks) started(err error) error {
	if err != nil {
		m.owed.Add(-1)
	}
	return err
}

// took counts one owed reply as arrived; false when none was owed (the
// Spot ended and counted them already).
func (m *drainMarks) took() bool {
	for {
		n := m.owed.Load()
		if n <= 0 {
			return false
		}
		if m.owed.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// graceLeft reports whether a drain's last turns still wait for owed
// replies at now.
func (ks *kindState) graceLeft(now time.Time) bool {
	u := ks.grace.Load()
	return u != 0 && now.UnixNano() < u
}

// defaultGrace is the grace of a drain without a deadline: half the
// default drain timeout.
const defaultGrace = 5 * time.Second

// drainGrace is until when the Spots a drain deactivates take their owed
// replies: half of what the drain has (ctx's deadline: the drain timeout).
func drainGrace(ctx context.Context, now time.Time) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		return now.Add(defaultGrace)
	}
	return now.Add(dl.Sub(now) / 2)
}

// windDown is the start of a drain's last turn: while the Spot is owed
// replies and the grace lasts, it waits for them (true) — calls go back
// to the kind actor meanwhile (the Spot is gone), replies run as turns.
func (a *spotActor) windDown() bool {
	m := &a.act.drain
	w := m.owed.Load() > 0 && !a.act.fenced.Load() && a.ks.graceLeft(time.Now())
	m.winding.Store(w)
	return w
}

// replied ends a drain's wait once the last reply owed has come: the
// last turn now.
func (a *spotActor) replied() {
	if m := &a.act.drain; m.winding.Load() && m.owed.Load() <= 0 {
		_ = a.act.ref.TellControl(&deactivate{})
	}
}

// abandon counts the replies the Spot is still owed as dropped: its
// activation ends without them.
func (a *spotActor) abandon() {
	if n := a.act.drain.owed.Swap(0); n > 0 {
		a.rt.stats.asyncAbandoned.Add(uint64(n))
	}
}

// refusing reports whether this node activates nothing now (draining or
// stopping).
func (a *kindActor) refusing() bool {
	_, draining := a.rt.n.PeerReady(a.rt.n.RID())
	return draining || a.rt.stopping.Load()
}

// elsewhere names the owner placement picks for Spot id, for a call this
// node will not serve; "" when placement has nobody but this node.
func (a *kindActor) elsewhere(id string) string {
	if to, ok := a.rt.place(a.ks.reg.name, id); ok && to != a.rt.n.RID() {
		return to
	}
	return ""
}

// redirect ends d with a redirect to the owner placement picks.
func (a *kindActor) redirect(d *delivery) {
	a.rt.stats.redirects.Add(1)
	a.rt.answer(d.r, &d.h, redirectReply(a.elsewhere(d.h.id), 0))
}

// drainTick runs on every tick while a drain or a stop deactivates the
// kind: it deactivates what became active since (a move adopted here that
// was prepared before the drain), repeats last-turn requests that did not
// fit a full mailbox, ends the waits for owed replies that are over (none
// owed, the grace passed, the lease lost) and answers deactivateAll once
// nothing is left. An undrained node takes Spots again.
func (a *kindActor) drainTick(c *actors.Context, now time.Time) {
	if !a.closingAll {
		return
	}
	if !a.refusing() {
		a.closingAll = false
		a.ks.grace.Store(0)
		return
	}
	for _, act := range a.ks.dir.all() {
		if e := a.table[act.id]; e != nil && e.state == moving {
			continue // its move decides
		}
		m := &act.drain
		switch {
		case !act.closing.Load() || !act.closeSent:
			a.close(c, act, act.fenced.Load())
		case m.winding.Load() && (m.owed.Load() <= 0 || !a.ks.graceLeft(now) || act.fenced.Load()):
			// Its wait is over: the last turn now (a second request after
			// the Spot's own one changes nothing).
			_ = act.ref.TellControl(&deactivate{})
		}
	}
	a.checkWaiters()
}
