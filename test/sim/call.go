package sim

import (
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// How a request can end at the server (empty: served by a turn).
const (
	errTimeout   = "caller timeout"
	errBusy      = "spot moving"
	errNoLease   = "no valid lease"
	errStore     = "store unavailable"
	errFenced    = "fenced during the claim"
	errContended = "contended claim"
	errNoTarget  = "no target after 2 hops"
)

// request is one call to a Spot, and its ledger: the caller ends it
// exactly once (a reply or its own timeout); the server side answers it
// or drops it (lost on the way, crashed with it) exactly once; at most one
// turn runs for it.
type request struct {
	id, spot int
	hops     int
	ended    bool   // the caller has its outcome
	outcome  string // the caller's outcome
	answers  int
	drops    int
	turns    int
	act      *activation
}

// activation is one Spot activation on one node lifecycle.
type activation struct {
	n       *node
	proc    uint64
	spot    int
	rec     fence.Record
	inc     uint64        // the spot shard's incarnation it was claimed under
	obs     time.Duration // true time the master showed (or wrote) its record
	created time.Duration
	ended   bool
	turns   int
	counted map[time.Duration]bool // overlap starts already counted
}

// move is a release or transfer (R4) of a deactivated Spot; it is retried
// until an answer is definite, and the node neither activates the Spot nor
// takes calls for it meanwhile (a release that timed out may still apply).
type move struct {
	rec     fence.Record
	to      fence.Holder // zero: release
	waiting bool         // for the Spot's turns in flight (of any activation)
	checked bool         // the target's lease was found live
	tries   int
}

// issue sends a call to spot through node n, as a caller would.
func (w *world) issue(n *node, spot int) *request {
	r := &request{id: len(w.reqs), spot: spot}
	w.reqs = append(w.reqs, r)
	w.tracef("req%d spot%d → %s", r.id, spot, n.rid)
	w.after(w.p.callTimeout, func() { w.clientEnd(r, errTimeout) })
	if w.chance(w.p.loss) {
		w.drop(r, "lost on the way")
		return r
	}
	w.after(w.lat(), func() { n.receive(r) })
	return r
}

func (w *world) clientEnd(r *request, outcome string) {
	if r.ended {
		if outcome != errTimeout {
			w.st.lateReplies++
		}
		return
	}
	r.ended, r.outcome = true, outcome
}

func (w *world) drop(r *request, why string) {
	r.drops++
	w.tracef("req%d dropped: %s", r.id, why)
	if r.answers+r.drops > 1 {
		w.problem("req%d ended twice at the server (%d answers, %d drops)", r.id, r.answers, r.drops)
	}
}

func (n *node) receive(r *request) {
	if !n.alive {
		n.w.drop(r, n.rid+" is down")
		return
	}
	n.exec(n.proc, func() { n.handle(r) }, func() { n.w.drop(r, n.rid+" crashed") })
}

// reply ends r at the server; the reply itself may be lost.
func (n *node) reply(r *request, proc uint64, outcome string) {
	w := n.w
	if n.proc != proc || !n.alive {
		w.drop(r, n.rid+" crashed")
		return
	}
	r.answers++
	if outcome == "" {
		w.st.served++
	} else {
		w.st.failed++
	}
	w.tracef("req%d answered by %s gen %d: %q", r.id, n.rid, n.gen, outcome)
	if r.answers+r.drops > 1 {
		w.problem("req%d ended twice at the server (%d answers, %d drops)", r.id, r.answers, r.drops)
	}
	if w.chance(w.p.loss) {
		return
	}
	w.after(w.lat(), func() { w.clientEnd(r, outcome) })
}

// handle serves r: a turn on a valid activation, or a claim.
func (n *node) handle(r *request) {
	proc := n.proc
	if n.moving[r.spot] != nil {
		n.reply(r, proc, errBusy)
		return
	}
	if a := n.acts[r.spot]; a != nil {
		if n.actValid(a) {
			n.runTurn(a, r)
			return
		}
		n.endAct(a, "no longer valid")
		if n.expired() {
			n.w.st.deadlineFences++
			n.refence("lease deadline passed")
		}
	}
	if !n.lease.Valid(n.local()) {
		n.reply(r, proc, errNoLease) // without a valid lease a node never claims
		return
	}
	n.claimRead(&claimRun{r: r, proc: proc, life: n.life, moves: n.moves[r.spot]})
}

// actValid is the check before every act: the lifecycle's lease (R2) and,
// under the confirm rule, the activation's shard incarnation.
func (n *node) actValid(a *activation) bool {
	now := n.local()
	if a.ended || !n.lease.Valid(now) {
		return false
	}
	if !n.w.p.confirm {
		return true
	}
	s := n.w.spotShard(a.spot)
	return a.inc == n.inc[s] && n.conf[s].Valid(now)
}

// runTurn runs r's turn after the check → act pause.
func (n *node) runTurn(a *activation, r *request) {
	n.inflight[a.spot]++
	proc := n.proc
	n.w.after(n.localDur(n.w.between(0, n.w.p.maxPause)), func() {
		n.inflight[a.spot]--
		if n.proc != proc || !n.alive {
			n.w.drop(r, n.rid+" crashed mid-turn")
			return
		}
		n.w.turn(a, r)
		n.reply(r, proc, "")
		if m := n.moving[a.spot]; m != nil && m.waiting && n.inflight[a.spot] == 0 {
			m.waiting = false
			n.sendMove(a.spot, m)
		}
	})
}

func (n *node) activate(spot int, rec fence.Record, inc uint64, obs time.Duration) *activation {
	if a := n.acts[spot]; a != nil {
		if a.rec == rec && a.inc == inc && !a.ended {
			return a
		}
		n.endAct(a, "replaced")
	}
	a := &activation{n: n, proc: n.proc, spot: spot, rec: rec, inc: inc, obs: obs, created: n.w.now, counted: map[time.Duration]bool{}}
	n.acts[spot] = a
	n.w.activated(a)
	return a
}

func (n *node) endAct(a *activation, why string) {
	if a.ended {
		return
	}
	a.ended = true
	if n.acts[a.spot] == a {
		n.acts[a.spot] = nil
	}
	n.w.tracef("%s deactivates spot%d %v: %s", n.rid, a.spot, a.rec, why)
}

// claimRun is one claim in progress (R3), one store call per step.
type claimRun struct {
	r          *request
	proc, life uint64
	inc        uint64        // the spot shard's incarnation in its last answer
	obs        time.Duration // true time of that answer's view
	moves      int           // the node's moves of the Spot when the claim began
	replans    int
}

func (n *node) claimRead(c *claimRun) {
	spot := c.r.spot
	n.op(n.w.spotShard(spot), func(s *shard) any { return s.read(spot) }, func(v any, inc uint64, ok bool) {
		if !ok {
			n.reply(c.r, c.proc, errStore)
			return
		}
		res := v.(casResult)
		c.inc, c.obs = inc, res.at
		n.claimPlan(c, res.cur, fence.Unknown)
	})
}

func (n *node) claimPlan(c *claimRun, rec fence.Record, owner fence.OwnerState) {
	w, r, spot := n.w, c.r, c.r.spot
	if n.life != c.life {
		n.reply(r, c.proc, errFenced)
		return
	}
	plan := fence.PlanClaim(n.holder(), rec, owner, 0)
	switch plan.Step {
	case fence.Mine:
		if !w.p.ackedMine || n.own[spot] == rec {
			n.activateAndTurn(c, rec)
			return
		}
		n.op(w.spotShard(spot), func(s *shard) any { return s.touch(spot, rec) }, func(v any, inc uint64, ok bool) {
			if !ok {
				n.reply(r, c.proc, errStore)
				return
			}
			res := v.(casResult)
			c.inc, c.obs = inc, res.at
			if res.ok {
				n.acked(c, spot, rec)
				n.activateAndTurn(c, rec)
				return
			}
			n.replan(c, res.cur)
		})
	case fence.Redirect:
		n.forward(c, plan.Owner)
	case fence.CheckOwner:
		n.op(w.leaseShard(plan.Owner.RID), func(s *shard) any { return s.checkOwner(plan.Owner) }, func(v any, _ uint64, ok bool) {
			if !ok {
				n.reply(r, c.proc, errStore)
				return
			}
			if v.(fence.OwnerState) == fence.Gone {
				w.st.checksGone++
			}
			n.claimPlan(c, rec, v.(fence.OwnerState))
		})
	case fence.CompareAndSet:
		n.op(w.spotShard(spot), func(s *shard) any { return s.cas(spot, plan.Expect, plan.New) }, func(v any, inc uint64, ok bool) {
			if !ok {
				n.reply(r, c.proc, errStore)
				return
			}
			res := v.(casResult)
			c.inc, c.obs = inc, res.at
			if res.ok {
				n.acked(c, spot, plan.New)
				n.activateAndTurn(c, plan.New)
				return
			}
			w.st.casConflicts++
			n.replan(c, res.cur)
		})
	}
}

// acked remembers a record this lifecycle wrote and the store acknowledged.
func (n *node) acked(c *claimRun, spot int, rec fence.Record) {
	if n.life == c.life {
		n.own[spot] = rec
	}
}

// replan plans again from the record a refused write found.
func (n *node) replan(c *claimRun, cur fence.Record) {
	if c.replans++; c.replans > 3 {
		n.reply(c.r, c.proc, errContended)
		return
	}
	n.claimPlan(c, cur, fence.Unknown)
}

// activateAndTurn activates only if the answer came before the deadline
// (R3), never while a move of the Spot is unsettled, and never on a view
// older than the node's own last move of the Spot (a claim that read the
// record before the node released it must not take it back on that read).
func (n *node) activateAndTurn(c *claimRun, rec fence.Record) {
	if n.life != c.life || n.moving[c.r.spot] != nil || n.moves[c.r.spot] != c.moves || !n.lease.Valid(n.local()) {
		n.reply(c.r, c.proc, errFenced)
		return
	}
	a := n.activate(c.r.spot, rec, c.inc, c.obs)
	if !n.actValid(a) {
		n.endAct(a, "claimed under an incarnation already gone")
		n.reply(c.r, c.proc, errFenced)
		return
	}
	n.runTurn(a, c.r)
}

// forward sends r to the recorded owner; after 2 hops it ends.
func (n *node) forward(c *claimRun, owner fence.Holder) {
	w, r := n.w, c.r
	if r.hops++; r.hops > 2 {
		w.st.noTarget++
		n.reply(r, c.proc, errNoTarget)
		return
	}
	w.st.redirects++
	to := w.node(owner.RID)
	w.tracef("req%d spot%d %s → %s (owner %v)", r.id, r.spot, n.rid, to.rid, owner)
	if w.chance(w.p.loss) {
		w.drop(r, "lost on the way")
		return
	}
	w.after(w.lat(), func() { to.receive(r) })
}

// startMove deactivates spot and then releases it (to == nil) or transfers
// it to to's current lifecycle, once its turns in flight are done.
func (n *node) startMove(spot int, to *node) {
	a := n.acts[spot]
	if a == nil || !n.actValid(a) || n.moving[spot] != nil {
		return
	}
	m := &move{rec: a.rec, waiting: true}
	if to != nil && to != n && to.alive {
		m.to = to.holder()
	}
	n.moving[spot] = m
	n.moves[spot]++
	delete(n.own, spot)
	n.endAct(a, "deactivated to move")
	if n.inflight[spot] == 0 {
		m.waiting = false
		n.sendMove(spot, m)
	}
}

func (n *node) sendMove(spot int, m *move) {
	w, life, proc := n.w, n.life, n.proc
	retry := func() {
		m.tries++
		w.after(n.localDur(w.p.fence.RenewEvery), func() {
			n.exec(proc, func() {
				if n.life == life && n.moving[spot] == m {
					n.sendMove(spot, m)
				}
			}, nil)
		})
	}
	if m.to.RID != "" && !m.checked { // the target's lease lives on another slot: check it first
		n.op(w.leaseShard(m.to.RID), func(s *shard) any { return s.checkOwner(m.to) }, func(v any, _ uint64, ok bool) {
			switch {
			case n.life != life || n.moving[spot] != m:
			case !ok && !w.p.settleMoves:
				delete(n.moving, spot)
			case !ok:
				retry()
			default:
				m.checked = true
				if v.(fence.OwnerState) == fence.Gone {
					m.to = fence.Holder{}
				}
				n.sendMove(spot, m)
			}
		})
		return
	}
	to := m.to
	n.op(w.spotShard(spot), func(s *shard) any {
		if to.RID == "" {
			return s.release(spot, m.rec)
		}
		return s.transfer(spot, m.rec, to)
	}, func(v any, _ uint64, ok bool) {
		if n.life != life || n.moving[spot] != m {
			return
		}
		if !ok && w.p.settleMoves {
			retry()
			return
		}
		delete(n.moving, spot)
		if !ok {
			return // not settled: the Spot is claimable again at once
		}
		res := v.(casResult)
		want := fence.Record{Epoch: m.rec.Epoch}
		if to.RID != "" {
			want = fence.Record{Holder: to, Epoch: m.rec.Epoch + 1}
		}
		switch {
		case res.ok && to.RID == "":
			w.st.releases++
		case res.ok:
			w.st.transfers++
		case res.cur == want: // an earlier try whose answer was lost did it
		case m.tries == 0:
			// The record changed under a live activation: a lost store
			// write. The runtime counts and logs this.
			w.st.movesLog++
			n.logLoss("spot%d: record %v changed to %v under a live activation", spot, m.rec, res.cur)
		}
	})
}
