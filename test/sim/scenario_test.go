package sim

import (
	"testing"
	"time"
)

// quiet are params for scripted scenarios: no random calls, faults, moves
// or lost messages; the script does everything.
func quiet() params {
	p := defaultParams()
	p.calls, p.faults, p.moves, p.bursts = false, false, false, false
	p.loss, p.late = 0, 0
	p.spots = 8
	return p
}

// scenario is a scripted world.
type scenario struct {
	t *testing.T
	*world
}

func newScenario(t *testing.T, seed uint64, p params) *scenario {
	t.Helper()
	s := &scenario{t: t, world: newWorld(seed, p)}
	s.tracing = true
	s.runUntil(100*time.Millisecond + 2*max(p.replLag, p.replLagMin)) // every lease created and acknowledged
	for _, n := range s.nodes {
		if !n.lease.Valid(n.local()) {
			t.Fatalf("seed %d: %s has no valid lease at %v", seed, n.rid, s.now)
		}
	}
	return s
}

// spotOn returns a Spot whose record lives on a shard accepted by ok.
func (s *scenario) spotOn(ok func(shard int) bool) int {
	s.t.Helper()
	for spot := 0; spot < s.p.spots; spot++ {
		if ok(s.spotShard(spot)) {
			return spot
		}
	}
	s.t.Fatal("no Spot on a fitting shard")
	return -1
}

// callEvery issues a call to spot through n every d until t.
func (s *scenario) callEvery(n *node, spot int, d, until time.Duration) {
	var loop func()
	loop = func() {
		if s.now < until {
			s.issue(n, spot)
			s.after(d, loop)
		}
	}
	s.after(0, loop)
}

// finish runs to the end, runs the end-of-run checks and fails on any
// problem.
func (s *scenario) finish() {
	s.t.Helper()
	s.runUntil(s.end)
	s.finalChecks()
	if len(s.problems) > 0 {
		s.t.Fatalf("seed %d: %d problems, first: %s\n%s\nlast steps:\n%s", s.seed, len(s.problems), s.problems[0], s.summary(), s.lastStepsBefore(*traceLines))
	}
}

// claims counts the claims written for spot.
func (s *scenario) claims(spot int) int {
	c := 0
	for _, h := range s.hist[spot] {
		if h.kind == kindClaim {
			c++
		}
	}
	return c
}

// activationsOf returns the activations of spot, in order.
func (s *scenario) activationsOf(spot int) []*activation { return s.actsOf[spot] }

// R1/R2, the deadline path: an owner cut from its lease shard only (its
// callers and its Spot's shard still reach it) passes its deadline, fences
// its activation and registers again under a new generation without a
// crash. Another node claims the Spot once the old lease is gone,
// tombstoning it; the old generation can then never be created or renewed
// again; no activation overlaps.
func TestScenario_DeadlinePassedFencesAndRegistersAgain(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		s := newScenario(t, seed, quiet())
		x, y := s.nodes[0], s.nodes[1]
		ls := s.leaseShard(x.rid)
		spot := s.spotOn(func(sh int) bool { return sh != ls })
		old := x.holder()
		s.issue(x, spot)
		s.runUntil(200 * time.Millisecond)
		if a := x.acts[spot]; a == nil || a.rec.Holder != old {
			t.Fatalf("seed %d: %s did not activate spot %d: %v", seed, x.rid, spot, a)
		}
		x.cutUntil(ls, s.now+3*s.p.fence.TTL)
		s.callEvery(x, spot, 7*time.Millisecond, 3*time.Second)
		s.callEvery(y, spot, 11*time.Millisecond, 3*time.Second)
		s.runUntil(2 * time.Second)
		sh := s.shards[ls]
		if !sh.tombstoned(old) {
			t.Fatalf("seed %d: %v not tombstoned on shard %d", seed, old, ls)
		}
		refusals := s.st.tombRefusals
		if sh.createLease(old) || sh.renewLease(old) || s.st.tombRefusals != refusals+2 {
			t.Fatalf("seed %d: the tombstoned %v could be created or renewed", seed, old)
		}
		s.finish()

		if s.st.crashes != 0 || x.gen < 2 || s.st.deadlineFences == 0 {
			t.Fatalf("seed %d: crashes %d, %s generation %d, deadline fences %d: want a crash-free re-registration",
				seed, s.st.crashes, x.rid, x.gen, s.st.deadlineFences)
		}
		if s.st.overlaps != 0 || s.lossAt >= 0 {
			t.Fatalf("seed %d: %d overlaps", seed, s.st.overlaps)
		}
		h := s.hist[spot]
		if len(h) < 2 || h[1].rec.Holder == old || h[1].rec.Epoch != 2 {
			t.Fatalf("seed %d: history %v: want a second claim with epoch 2 by another lifecycle", seed, h)
		}
		served := 0
		for _, r := range s.reqs {
			if r.outcome == "" && r.act != nil && r.act.rec.Holder != old {
				served++
			}
		}
		if served == 0 {
			t.Fatalf("seed %d: nobody served the Spot after %v was fenced", seed, old)
		}
	}
}

// R1, the refusal path: the lease shard loses the owner's lease key (a
// restart of that shard only: the Spot's record survives elsewhere). The
// owner's next renewal is refused while it still counts the lease valid:
// it logs, fences its activation and registers again under a new
// generation, without a crash. Calls made only after that find no overlap.
func TestScenario_RefusedRenewalFencesAndRegistersAgain(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		s := newScenario(t, seed, quiet())
		x := s.nodes[0]
		ls := s.leaseShard(x.rid)
		spot := s.spotOn(func(sh int) bool { return sh != ls })
		old := x.holder()
		s.issue(x, spot)
		s.runUntil(200 * time.Millisecond)
		s.shards[ls].restartEmpty()
		s.runUntil(200*time.Millisecond + 2*s.p.fence.RenewEvery)
		if x.gen != old.Gen+1 || s.st.refusedWhileValid == 0 || len(x.logs) == 0 {
			t.Fatalf("seed %d: %s generation %d, refused while valid %d, logs %d: want a logged refusal and generation %d",
				seed, x.rid, x.gen, s.st.refusedWhileValid, len(x.logs), old.Gen+1)
		}
		if x.acts[spot] != nil {
			t.Fatalf("seed %d: the activation survived the refusal", seed)
		}
		for _, n := range s.nodes {
			s.callEvery(n, spot, 13*time.Millisecond, time.Second)
		}
		s.finish()
		if s.st.crashes != 0 || s.st.overlaps != 0 {
			t.Fatalf("seed %d: crashes %d, overlaps %d", seed, s.st.crashes, s.st.overlaps)
		}
		acts := s.activationsOf(spot)
		if len(acts) < 2 || acts[1].rec.Epoch <= acts[0].rec.Epoch || acts[1].rec.Holder == old {
			t.Fatalf("seed %d: activations %v: want a new claim with a higher epoch", seed, acts)
		}
	}
}

// Concurrent first calls: many callers call one unowned Spot at the same
// instant through every node. Exactly one claim is written, exactly one
// activation runs, and it serves every call (the losers of the race are
// redirected to it). With and without WAIT.
func TestScenario_ConcurrentFirstCallsOneActivation(t *testing.T) {
	conflicts, redirects := 0, 0
	for _, wait := range []bool{false, true} {
		for seed := uint64(1); seed <= 20; seed++ {
			p := quiet()
			p.wait = wait
			s := newScenario(t, seed, p)
			spot := int(seed) % p.spots
			rs := s.burst(spot, 4*len(s.nodes))
			s.finish()
			if c := s.claims(spot); c != 1 || len(s.actsOf[spot]) != 1 {
				t.Fatalf("seed %d wait %v: %d claims written, %d activations, want 1 and 1", seed, wait, c, len(s.actsOf[spot]))
			}
			for _, r := range rs {
				if r.outcome != "" || r.act != s.actsOf[spot][0] {
					t.Fatalf("seed %d wait %v: req%d ended %q served by %v, want served by the one activation", seed, wait, r.id, r.outcome, r.act)
				}
			}
			conflicts += s.st.casConflicts
			redirects += s.st.redirects
		}
	}
	if conflicts == 0 || redirects == 0 {
		t.Fatalf("%d conflicts, %d redirects: the callers never raced", conflicts, redirects)
	}
}

// Each claim step is its own event on its own shard: claimers of a Spot
// whose owner crashed interleave their reads, owner checks (on the lease
// shard) and compare-and-sets; one wins, the others are refused, plan
// again from the record they found and are redirected. Exactly one new
// activation serves every call; no overlap.
func TestScenario_ClaimStepsInterleave(t *testing.T) {
	interleaved, conflicts := 0, 0
	for seed := uint64(1); seed <= 10; seed++ {
		s := newScenario(t, seed, quiet())
		x, y, z := s.nodes[0], s.nodes[1], s.nodes[2]
		spot := s.spotOn(func(int) bool { return true })
		s.issue(x, spot)
		s.runUntil(200 * time.Millisecond)
		x.crash(5 * time.Second)
		s.runUntil(200*time.Millisecond + s.p.fence.TTL + s.p.fence.Margin)
		type step struct{ who, what string }
		var steps []step
		s.onStep = func(who, what string, sp int) {
			if sp == spot || sp < 0 {
				steps = append(steps, step{who, what})
			}
		}
		rs := []*request{s.issue(y, spot), s.issue(z, spot), s.issue(y, spot), s.issue(z, spot)}
		s.finish()
		if len(s.actsOf[spot]) != 2 || s.st.overlaps != 0 {
			t.Fatalf("seed %d: %d activations, %d overlaps", seed, len(s.actsOf[spot]), s.st.overlaps)
		}
		for _, r := range rs {
			if r.outcome != "" || r.act != s.actsOf[spot][1] {
				t.Fatalf("seed %d: req%d ended %q, want served by the new activation", seed, r.id, r.outcome)
			}
		}
		// Interleaved: between one claimer's first and last step, the
		// other claimer applied a step.
		first, last := map[string]int{}, map[string]int{}
		for i, st := range steps {
			if _, ok := first[st.who]; !ok {
				first[st.who] = i
			}
			last[st.who] = i
		}
		for i, st := range steps {
			if st.who != y.rid && i > first[y.rid] && i < last[y.rid] {
				interleaved++
				break
			}
		}
		conflicts += s.st.casConflicts
	}
	if interleaved == 0 || conflicts == 0 {
		t.Fatalf("interleaved in %d runs, %d refused compare-and-sets: the claim steps never interleaved", interleaved, conflicts)
	}
	t.Logf("interleaved in %d of 10 runs, %d refused compare-and-sets", interleaved, conflicts)
}

// Process pauses and drift: an owner whose clock runs slow by ρ/2 while
// its lease shard's runs fast by ρ/2 (the worst case for R2) pauses for
// 2 × TTL. Another node claims the Spot once the lease is gone; the owner
// wakes past its deadline, fences and registers again; no overlap.
func TestScenario_LongPauseWorstDriftNoOverlap(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		s := newScenario(t, seed, quiet())
		x, y := s.nodes[0], s.nodes[1]
		ls := s.leaseShard(x.rid)
		x.setDrift(-s.p.fence.Rho / 2)
		s.shards[ls].drift = s.p.fence.Rho / 2
		spot := s.spotOn(func(sh int) bool { return sh != ls })
		s.issue(x, spot)
		s.runUntil(300 * time.Millisecond)
		s.callEvery(x, spot, 3*time.Millisecond, 2*time.Second)
		s.callEvery(y, spot, 5*time.Millisecond, 2*time.Second)
		s.after(50*time.Millisecond, func() { x.freezeUntil(s.now + 2*s.p.fence.TTL) })
		s.finish()
		if s.st.overlaps != 0 || x.gen < 2 || len(s.actsOf[spot]) < 2 {
			t.Fatalf("seed %d: %d overlaps, %s generation %d, %d activations", seed, s.st.overlaps, x.rid, x.gen, len(s.actsOf[spot]))
		}
	}
}

// An empty restart of the whole store: every lease, tombstone and record
// is gone. Every node's next renewal is refused while it still counts its
// lease valid (logged), and it fences and registers again without a
// crash; Spots are claimed anew. Overlaps stay within the bound. Epochs
// start again at 1: without persisted state, epochs strictly increase
// only while no write is lost.
func TestScenario_EmptyRestartWholeStore(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		s := newScenario(t, seed, quiet())
		for i, n := range s.nodes {
			s.issue(n, i)
		}
		s.runUntil(300 * time.Millisecond)
		for i, n := range s.nodes {
			s.callEvery(n, i, 4*time.Millisecond, 2*time.Second)
			s.callEvery(s.nodes[(i+1)%len(s.nodes)], i, 6*time.Millisecond, 2*time.Second)
		}
		restart := s.now + 100*time.Millisecond
		s.at(restart, func() {
			for _, sh := range s.shards {
				sh.restartEmpty()
			}
		})
		s.finish()
		for _, n := range s.nodes {
			if n.gen < 2 || len(n.logs) == 0 {
				t.Fatalf("seed %d: %s generation %d, %d logs: want a logged re-registration", seed, n.rid, n.gen, len(n.logs))
			}
		}
		if s.st.crashes != 0 || s.st.refusedWhileValid < len(s.nodes) {
			t.Fatalf("seed %d: %d crashes, %d refusals while valid", seed, s.st.crashes, s.st.refusedWhileValid)
		}
		for i := range s.nodes {
			var first *applied
			for j, h := range s.hist[i] {
				if h.at > restart && h.kind == kindClaim && first == nil {
					first = &s.hist[i][j]
				}
			}
			if first == nil || first.rec.Epoch != 1 || s.actsOf[i][len(s.actsOf[i])-1].created < restart {
				t.Fatalf("seed %d: spot %d: first claim after the restart %v, want epoch 1 and a new activation", seed, i, first)
			}
		}
	}
}
