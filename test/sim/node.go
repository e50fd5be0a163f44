package sim

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

var epoch0 = time.Unix(0, 0)

// node is one Object Server. Its process (proc) survives everything but a
// crash; its lifecycle (life: RID and generation, with its lease and
// activations) also ends when the lease is refused or its deadline passes,
// and the node then registers again under a new generation without a crash.
type node struct {
	w        *world
	id       int
	rid      string
	gen      uint64
	proc     uint64 // bumps on crash: answers to a dead process are dropped
	life     uint64 // bumps on crash and re-registration
	lease    *fence.Lease
	created  bool // R1: the create was sent; from now on only renewals
	acts     []*activation
	inflight map[int]int // per Spot: turns past their check, of any activation or lifecycle
	moving   map[int]*move
	moves    map[int]int // per Spot: moves this lifecycle started
	alive    bool
	frozen   time.Duration         // true time until which the process is paused
	cut      map[int]time.Duration // per shard: true time until which it is unreachable
	inc      []uint64              // per shard: last incarnation seen (0: none yet)
	conf     []*fence.Lease        // per shard: confirmations of inc (the confirm rule)
	logs     []time.Duration       // when this node logged evidence of a lost store write
	own      map[int]fence.Record  // records this lifecycle wrote and the store acknowledged
	lateOps  int                   // scenarios: the next this many requests apply only after their deadline

	// the clock: local = base + (now − t0)·(1 + drift); its rate may change
	// (within ρ/2 of true time) but it never steps.
	base  time.Time
	t0    time.Duration
	drift float64
}

func (n *node) holder() fence.Holder { return fence.Holder{RID: n.rid, Gen: n.gen} }

// local is the node's monotonic clock at true time now.
func (n *node) local() time.Time {
	if n.base.IsZero() {
		n.base = epoch0
	}
	return n.base.Add(time.Duration(float64(n.w.now-n.t0) * (1 + n.drift)))
}

// setDrift changes the clock's rate from now on.
func (n *node) setDrift(d float64) { n.base, n.t0, n.drift = n.local(), n.w.now, d }

// localDur converts a duration on the node's clock to true time.
func (n *node) localDur(d time.Duration) time.Duration {
	return time.Duration(float64(d) / (1 + n.drift))
}

func shardOf(key string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

func (w *world) leaseShard(rid string) int { return shardOf("spotlease:"+rid, w.p.shards) }
func (w *world) spotShard(spot int) int    { return shardOf("spot:"+strconv.Itoa(spot), w.p.shards) }

// boot starts a process: no memory of shard incarnations, a new lifecycle.
func (n *node) boot() {
	n.alive, n.frozen = true, 0
	n.proc++
	if n.cut == nil {
		n.cut, n.inflight = map[int]time.Duration{}, map[int]int{}
	}
	n.inc = make([]uint64, n.w.p.shards)
	n.conf = make([]*fence.Lease, n.w.p.shards)
	for s := range n.conf {
		n.conf[s] = fence.NewLease(n.w.p.fence)
	}
	n.newLifecycle()
	n.tick(n.life)
}

// newLifecycle starts a new generation (R1: a lease is used once).
func (n *node) newLifecycle() {
	n.gen++
	n.life++
	n.lease = fence.NewLease(n.w.p.fence)
	n.created = false
	n.acts = make([]*activation, n.w.p.spots)
	n.moving = map[int]*move{}
	n.moves = map[int]int{}
	n.own = map[int]fence.Record{}
}

// refence ends the lifecycle without a crash (R1): every activation is
// fenced and the node registers again under a new generation at once.
func (n *node) refence(why string) {
	n.w.tracef("%s gen %d: %s: fences every activation, registers as gen %d", n.rid, n.gen, why, n.gen+1)
	n.fenceAll(why)
	n.w.st.reregs++
	n.newLifecycle()
	n.tick(n.life)
}

func (n *node) fenceAll(why string) {
	for _, a := range n.acts {
		if a != nil {
			n.endAct(a, why)
		}
	}
}

// expired: the lease was acknowledged once and its deadline has passed.
func (n *node) expired() bool {
	return !n.lease.Deadline().IsZero() && !n.lease.Valid(n.local())
}

// exec runs fn in process proc now, or when its pause ends; if that
// process crashed, dead runs instead (when not nil).
func (n *node) exec(proc uint64, fn, dead func()) {
	switch {
	case n.proc != proc || !n.alive:
		if dead != nil {
			dead()
		}
	case n.frozen > n.w.now:
		n.w.after(n.frozen-n.w.now, func() { n.exec(proc, fn, dead) })
	default:
		fn()
	}
}

// op sends fn to shard s and calls done with its answer and the shard's
// incarnation, or with ok=false when the request or answer is lost, the
// node is cut off from s, or the timeout passes first (a late request may
// still be applied afterwards). done runs exactly once: in the process
// that asked (after its pause), or at once with ok=false if it crashed.
func (n *node) op(s int, fn func(*shard) any, done func(v any, inc uint64, ok bool)) {
	w, proc := n.w, n.proc
	sent, conf := n.local(), n.conf[s]
	tok := conf.Sent(sent)
	finished := false
	finish := func(v any, inc uint64, ok bool) {
		if finished {
			return
		}
		finished = true
		n.exec(proc, func() {
			if ok {
				n.seen(s, inc, conf, tok, sent)
			} else {
				conf.Lost(tok)
			}
			done(v, inc, ok)
		}, func() { done(nil, 0, false) })
	}
	w.after(n.localDur(w.p.timeout), func() { finish(nil, 0, false) })
	if n.cut[s] > w.now || w.chance(w.p.loss) {
		return
	}
	delay := w.lat()
	if n.lateOps > 0 || w.chance(w.p.late) {
		n.lateOps = max(n.lateOps-1, 0)
		w.st.late++
		delay = n.localDur(w.p.timeout) + w.between(0, w.p.fence.TTL)
	}
	w.after(delay, func() {
		sh := w.shards[s]
		sh.last, sh.caller = nil, n.rid
		v := fn(sh)
		wr, inc := sh.last, sh.inc
		answer := func() {
			if wr != nil {
				if wr.lost { // WAIT: the replica never got it
					return
				}
				wr.acked = true
			}
			if n.cut[s] > w.now || w.chance(w.p.loss) {
				return
			}
			w.after(w.lat(), func() { finish(v, inc, true) })
		}
		if wr != nil && w.p.wait {
			w.after(wr.replicated-w.now, answer)
			return
		}
		answer()
	})
}

// seen handles the incarnation an answer of shard s carried. A change is
// evidence that the shard failed over or restarted: logged, and under the
// confirm rule every activation whose record lives there is fenced.
func (n *node) seen(s int, inc uint64, conf *fence.Lease, tok uint64, sent time.Time) {
	switch {
	case inc < n.inc[s]: // applied before a failover this node already saw
		conf.Lost(tok)
	case inc == n.inc[s] && conf == n.conf[s]:
		conf.Acked(tok)
	case inc == n.inc[s]:
		n.conf[s].Acked(n.conf[s].Sent(sent))
	default:
		if n.inc[s] != 0 {
			n.w.st.incLogs++
			n.logLoss("shard%d changed incarnation %d→%d", s, n.inc[s], inc)
			if n.w.p.confirm {
				for _, a := range n.acts {
					if a != nil && n.w.spotShard(a.spot) == s && a.inc != inc {
						n.w.st.confirmFences++
						n.endAct(a, "its shard changed incarnation")
					}
				}
			}
		}
		n.inc[s], n.conf[s] = inc, fence.NewLease(n.w.p.fence)
		n.conf[s].Acked(n.conf[s].Sent(sent))
	}
}

// logLoss is what the runtime would log: evidence of a lost store write.
func (n *node) logLoss(format string, args ...any) {
	n.logs = append(n.logs, n.w.now)
	n.w.tracef(n.rid+" LOGS "+format, args...)
}

// tick is one period of the lease loop: fence and register again if the
// deadline passed, else renew (the first time: create) and probe every
// other shard.
func (n *node) tick(life uint64) {
	if n.life != life || !n.alive {
		return
	}
	if n.frozen > n.w.now {
		n.w.after(n.frozen-n.w.now, func() { n.tick(life) })
		return
	}
	if n.expired() {
		n.w.st.deadlineFences++
		n.refence("lease deadline passed")
		return
	}
	n.renew()
	for s := range n.w.shards {
		if s != n.w.leaseShard(n.rid) {
			n.op(s, func(*shard) any { return nil }, func(any, uint64, bool) {})
		}
	}
	n.w.after(n.localDur(n.w.p.fence.RenewEvery), func() { n.tick(life) })
}

// renew sends the lifecycle's create (once) or a renewal (R1) and counts
// it only when acknowledged (R2). A refusal ends the lifecycle.
func (n *node) renew() {
	h, le, life := n.holder(), n.lease, n.life
	create := !n.created
	n.created = true
	tok := le.Sent(n.local())
	n.op(n.w.leaseShard(n.rid), func(s *shard) any {
		if create {
			return s.createLease(h)
		}
		return s.renewLease(h)
	}, func(v any, _ uint64, ok bool) {
		if n.life != life {
			return
		}
		switch {
		case !ok:
			le.Lost(tok)
		case v.(bool):
			if create {
				n.w.st.created++
			}
			le.Acked(tok)
			n.watch()
		default:
			n.w.st.refusedRenew++
			if le.Valid(n.local()) {
				n.w.st.refusedWhileValid++
				n.logLoss("lease %v refused while valid", h)
			}
			le.Refused()
			n.refence("lease refused")
		}
	})
}

// watch fences the lifecycle when its deadline passes (R1), unless an
// acknowledged renewal moved it first.
func (n *node) watch() {
	life, proc := n.life, n.proc
	wait := n.localDur(n.lease.Deadline().Sub(n.local())) + time.Microsecond
	n.w.after(wait, func() {
		n.exec(proc, func() {
			if n.life == life && n.expired() {
				n.w.st.deadlineFences++
				n.refence("lease deadline passed")
			}
		}, nil)
	})
}

// cutUntil cuts the node off from shard s until t (both directions).
func (n *node) cutUntil(s int, t time.Duration) {
	n.cut[s] = max(n.cut[s], t)
	n.w.tracef("%s cut from shard%d until %v", n.rid, s, t)
}

// freezeUntil pauses the whole process until t: timers, answers and new
// calls wait. A turn already past its check is not held back: pauses
// between a check and its act are the maxPause ones, bounded by the margin.
func (n *node) freezeUntil(t time.Duration) {
	n.frozen = max(n.frozen, t)
	n.w.tracef("%s paused until %v", n.rid, t)
}

// crash stops the process; it comes back after d with a new generation
// and no memory.
func (n *node) crash(d time.Duration) {
	if !n.alive {
		return
	}
	n.w.st.crashes++
	n.w.tracef("%s CRASHES (gen %d), back in %v", n.rid, n.gen, d)
	n.alive = false
	n.fenceAll("crash")
	n.proc++
	n.life++
	n.moving = map[int]*move{}
	n.w.after(d, n.boot)
}
