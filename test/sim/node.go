package sim

import (
	"hash/fnv"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

var epoch0 = time.Unix(0, 0)

// node is one Object Server: a lifecycle (RID, generation) with its lease,
// its activations, and a clock that drifts.
type node struct {
	w          *world
	id         int
	rid        string
	gen        uint64
	drift      float64
	lease      *fence.Lease
	registered bool // the lease key was created for this generation
	acts       map[int]fence.Record
	alive      bool
	frozen     time.Duration // true time until which the process is paused
	cut        map[int]time.Duration
	life       uint64 // bumps on crash and re-registration: late answers of an old life are ignored
}

func (n *node) holder() fence.Holder { return fence.Holder{RID: n.rid, Gen: n.gen} }

// local is the node's monotonic clock at true time now.
func (n *node) local() time.Time {
	return epoch0.Add(time.Duration(float64(n.w.now) * (1 + n.drift)))
}

// localDur converts a duration on the node's clock to true time.
func (n *node) localDur(d time.Duration) time.Duration {
	return time.Duration(float64(d) / (1 + n.drift))
}

func (n *node) start() {
	n.alive, n.cut = true, map[int]time.Duration{}
	n.newLifecycle()
	n.renewLoop(n.life)
}

// newLifecycle registers again under a new generation (R1: a lease is
// used once).
func (n *node) newLifecycle() {
	n.gen++
	n.life++
	n.lease = fence.NewLease(n.w.p.fence)
	n.registered = false
	n.acts = map[int]fence.Record{}
}

func shardOf(key string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

func (n *node) leaseShard(h fence.Holder) int { return shardOf("lease:"+h.RID, n.w.p.shards) }
func (n *node) spotShard(spot int) int        { return shardOf("spot:"+string(rune('a'+spot)), n.w.p.shards) }

// op sends fn to shard s and calls done with its answer, or with ok=false
// when the request or the answer is lost, the shard is cut off, or the
// timeout passes first. done runs at most once, and never for an old life.
func (n *node) op(s int, fn func(*shard) any, done func(v any, ok bool)) {
	w, life := n.w, n.life
	finished := false
	finish := func(v any, ok bool) {
		if finished {
			return
		}
		finished = true
		if n.life != life || !n.alive {
			done(nil, false) // the process that asked is gone: the call ends, nothing else changes
			return
		}
		if n.frozen > w.now { // answers wait until the process runs again
			at := n.frozen
			w.after(at-w.now, func() { done(v, ok) })
			return
		}
		done(v, ok)
	}
	w.after(n.localDur(w.p.timeout), func() { finish(nil, false) })
	if n.cut[s] > w.now || w.rng.Float64() < w.p.loss {
		return
	}
	w.after(w.between(0, w.p.maxLat), func() {
		sh := w.shards[s]
		sh.last = nil
		v := fn(sh)
		wr := sh.last
		answer := func() {
			if wr != nil {
				if wr.lost { // WAIT: the replica never got it
					return
				}
				wr.acked = w.now
			}
			if n.cut[s] > w.now || w.rng.Float64() < w.p.loss {
				return
			}
			w.after(w.between(0, w.p.maxLat), func() { finish(v, true) })
		}
		if wr != nil && w.p.wait {
			w.after(wr.replicated-w.now, answer)
			return
		}
		answer()
	})
}

// renewLoop creates the lease once, then renews it every RenewEvery.
func (n *node) renewLoop(life uint64) {
	if n.life != life || !n.alive {
		return
	}
	if n.frozen > n.w.now {
		n.w.after(n.frozen-n.w.now, func() { n.renewLoop(life) })
		return
	}
	h, create, le := n.holder(), !n.registered, n.lease
	tok := le.Sent(n.local())
	n.op(n.leaseShard(h), func(s *shard) any {
		if create {
			return s.createLease(h)
		}
		return s.renewLease(h)
	}, func(v any, ok bool) {
		switch {
		case !ok:
			le.Lost(tok)
		case v.(bool):
			n.registered = true
			le.Acked(tok)
		default:
			// Refused (gone, tombstoned, or a create that found a key):
			// fence everything and register again.
			n.lease.Refused()
			n.newLifecycle()
		}
	})
	if n.w.now < n.w.p.run+5*n.w.p.fence.TTL {
		n.w.after(n.localDur(n.w.p.fence.RenewEvery), func() { n.renewLoop(n.life) })
	}
}

// call is one request to spot: a turn on a valid local activation, or a
// claim. It ends exactly once.
func (n *node) call(spot int) {
	w := n.w
	w.calls++
	ended := false
	end := func() {
		if ended {
			w.problem("a call to spot %d ended twice", spot)
			return
		}
		ended = true
		w.ended++
	}
	if !n.alive || n.frozen > w.now {
		end() // the process cannot take the call: the caller's error
		return
	}
	if act, ok := n.acts[spot]; ok {
		if !n.lease.Valid(n.local()) {
			n.acts = map[int]fence.Record{} // past the deadline: fence every Spot
			end()
			return
		}
		life := n.life
		w.after(n.localDur(w.between(0, w.p.maxPause)), func() {
			if n.life == life && n.alive {
				w.turn(spot, act)
			}
			end()
		})
		return
	}
	if !n.lease.Valid(n.local()) {
		end() // no live lease: never claims
		return
	}
	n.claim(spot, fence.Unknown, fence.Record{}, end)
}

// claim runs R3 step by step, each step a separate event.
func (n *node) claim(spot int, owner fence.OwnerState, rec fence.Record, end func()) {
	self, ss, life := n.holder(), n.spotShard(spot), n.life
	step := func(rec fence.Record, owner fence.OwnerState) {
		switch plan := fence.PlanClaim(self, rec, owner, 0); plan.Step {
		case fence.Mine:
			if n.life == life && n.lease.Valid(n.local()) {
				n.acts[spot] = rec
			}
			end()
		case fence.Redirect:
			end()
		case fence.CheckOwner:
			n.op(n.leaseShard(plan.Owner), func(s *shard) any { return s.checkOwner(plan.Owner) }, func(v any, ok bool) {
				if !ok || n.life != life {
					end()
					return
				}
				n.claim(spot, v.(fence.OwnerState), rec, end)
			})
		case fence.CompareAndSet:
			n.op(ss, func(s *shard) any { return s.cas(spot, plan.Expect, plan.New) }, func(v any, ok bool) {
				// Activate only if the answer came before the deadline.
				if ok && n.life == life && v.(bool) && n.lease.Valid(n.local()) {
					n.acts[spot] = plan.New
				}
				end()
			})
		}
	}
	if owner != fence.Unknown {
		step(rec, owner)
		return
	}
	n.op(ss, func(s *shard) any { return s.read(spot) }, func(v any, ok bool) {
		if !ok || n.life != life {
			end()
			return
		}
		step(v.(fence.Record), fence.Unknown)
	})
}

// cutUntil cuts the node off from shard s until t.
func (n *node) cutUntil(s int, t time.Duration) { n.cut[s] = max(n.cut[s], t) }

// freezeUntil pauses the whole process until t (renewals and calls stop;
// a turn already past its check is not held back: pauses between a check
// and its act are the maxPause ones, bounded by the margin).
func (n *node) freezeUntil(t time.Duration) { n.frozen = max(n.frozen, t) }

// crash stops the process; it comes back after d with a new generation.
func (n *node) crash(d time.Duration) {
	if !n.alive {
		return
	}
	n.alive = false
	n.life++
	n.acts = map[int]fence.Record{}
	n.w.after(d, func() {
		n.alive = true
		n.newLifecycle()
		n.renewLoop(n.life)
	})
}
