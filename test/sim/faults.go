package sim

import "time"

// callLoop issues calls to random Spots through random nodes; now and
// then a burst: several callers call one Spot at the same instant through
// different nodes (concurrent first calls when it is unowned).
func (w *world) callLoop() {
	if w.now >= w.p.run {
		return
	}
	if w.p.bursts && w.chance(0.01) {
		w.burst(w.rng.IntN(w.p.spots), 3+w.rng.IntN(6))
	} else {
		w.issue(w.nodes[w.rng.IntN(len(w.nodes))], w.rng.IntN(w.p.spots))
	}
	w.after(w.between(0, 4*time.Millisecond), w.callLoop)
}

// burst issues m calls to spot now, spread over the nodes.
func (w *world) burst(spot, m int) []*request {
	w.st.bursts++
	w.tracef("BURST of %d calls to spot%d", m, spot)
	first := w.rng.IntN(len(w.nodes))
	var rs []*request
	for i := 0; i < m; i++ {
		rs = append(rs, w.issue(w.nodes[(first+i)%len(w.nodes)], spot))
	}
	return rs
}

// failoverK draws how many acknowledged writes a failover loses beyond
// what the replica had not received: with WAIT, none unless the replica
// fails too.
func (w *world) failoverK() int {
	if w.p.wait && !w.chance(w.p.doubleLoss) {
		return 0
	}
	if !w.p.wait && !w.chance(0.5) {
		return 0 // the replica's lag alone decides
	}
	return w.rng.IntN(w.p.maxK + 1)
}

// faultLoop injects one fault, then schedules the next.
func (w *world) faultLoop() {
	if w.now >= w.p.run {
		return
	}
	r := w.rng.IntN(100)
	if !w.p.lossy {
		r = 25 + w.rng.IntN(75)
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	switch {
	case r < 20: // a shard fails over
		w.shards[w.rng.IntN(len(w.shards))].failover(w.failoverK())
	case r < 25 && w.p.emptyRestart && w.chance(0.5): // the whole store restarts empty
		for _, s := range w.shards {
			s.restartEmpty()
		}
	case r < 25 && w.p.emptyRestart: // one shard restarts empty
		w.shards[w.rng.IntN(len(w.shards))].restartEmpty()
	case r < 25:
		w.shards[w.rng.IntN(len(w.shards))].failover(w.failoverK())
	case r < 40: // an owner is cut from its lease shard only: callers and spot shards still reach it
		w.st.cuts++
		if o := w.owner(); o != nil {
			n = o
		}
		n.cutUntil(w.leaseShard(n.rid), w.now+w.between(w.p.fence.TTL/2, 2*w.p.fence.TTL))
	case r < 50: // a node is cut from one shard (sometimes two): only some
		w.st.cuts++
		until := w.now + w.between(0, 2*w.p.fence.TTL)
		n.cutUntil(w.rng.IntN(len(w.shards)), until)
		if w.chance(0.3) {
			n.cutUntil(w.rng.IntN(len(w.shards)), until)
		}
	case r < 62: // a node crashes and comes back with a new generation
		n.crash(w.between(0, time.Second))
	case r < 80: // a node's process pauses (timers, answers, calls wait)
		w.st.pauses++
		n.freezeUntil(w.now + w.between(0, 2*w.p.fence.TTL))
	default: // a node's clock changes rate (within ρ/2; it never steps)
		n.setDrift(w.drift())
		w.tracef("%s clock drift now %.4f", n.rid, n.drift)
	}
	w.after(w.between(100*time.Millisecond, 500*time.Millisecond), w.faultLoop)
}

// owner is a random node with an activation, or nil.
func (w *world) owner() *node {
	first := w.rng.IntN(len(w.nodes))
	for i := range w.nodes {
		n := w.nodes[(first+i)%len(w.nodes)]
		for _, a := range n.acts {
			if a != nil && n.alive {
				return n
			}
		}
	}
	return nil
}

// moveLoop makes a node release (or transfer to another node) one of its
// Spots now and then, as idle deactivation and drains do.
func (w *world) moveLoop() {
	if w.now >= w.p.run {
		return
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	if n.alive && n.frozen <= w.now {
		spot := w.rng.IntN(w.p.spots)
		var to *node
		if w.chance(0.5) {
			to = w.nodes[w.rng.IntN(len(w.nodes))]
		}
		n.startMove(spot, to)
	}
	w.after(w.between(100*time.Millisecond, 400*time.Millisecond), w.moveLoop)
}
