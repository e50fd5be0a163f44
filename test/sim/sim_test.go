package sim

import (
	"strings"
	"testing"
)

// config is one world configuration the seed tests run, with what it
// asserts beyond the checks every world runs.
type config struct {
	name  string
	p     params
	check func(t *testing.T, seed uint64, w *world)
}

func noLossCheck(t *testing.T, seed uint64, w *world) {
	t.Helper()
	if w.st.overlaps != 0 || w.lossAt >= 0 || w.st.dupActivations != 0 {
		t.Errorf("seed %d: %d overlaps, %d duplicate activations, acknowledged loss at %v, in a run that must lose none",
			seed, w.st.overlaps, w.st.dupActivations, w.lossAt)
	}
}

func configs() []config {
	single, double := defaultParams(), defaultParams()
	single.wait, single.doubleLoss, single.emptyRestart = true, 0, false
	double.wait = true
	return []config{
		{"no lost write", noLoss(), noLossCheck},
		{"lost writes", defaultParams(), nil},
		{"WAIT, single failovers", single, noLossCheck},
		{"WAIT, double failures and restarts", double, nil},
	}
}

// runConfig runs c on seeds and returns the worlds.
func runConfig(t *testing.T, c config, seeds []uint64) []*world {
	t.Helper()
	var ws []*world
	for _, seed := range seeds {
		w := runSeed(t, seed, c.p)
		if c.check != nil {
			c.check(t, seed, w)
		}
		ws = append(ws, w)
	}
	return ws
}

// need fails the test when a path the configuration is meant to exercise
// never happened on the seeds run (so a check is tested, not only stated).
func need(t *testing.T, what string, n int) {
	t.Helper()
	if n == 0 && *oneSeed == 0 {
		t.Errorf("no %s happened on these seeds: the test no longer exercises it", what)
	}
}

// While the store loses no acknowledged write — partitions from some
// shards (owners cut from their lease shard only among them), crashes,
// pauses, clock drift and rate changes, lost and late messages, releases
// and transfers, concurrent first calls; no failover or restart — no two
// activations ever overlap, epochs strictly increase, (Spot, epoch) has
// one activating lifecycle, and every call ends exactly once.
func TestSim_NoLostWriteNoOverlap(t *testing.T) {
	t.Parallel()
	ws := runConfig(t, configs()[0], seeds())
	s := total(ws)
	for what, n := range map[string]int{"turn": s.turns, "crash": s.crashes, "pause": s.pauses, "partition": s.cuts,
		"late request": s.late, "deadline fence": s.deadlineFences, "crash-free re-registration": s.reregs,
		"refused renewal": s.refusedRenew, "tombstoning check": s.checksGone, "refused compare-and-set": s.casConflicts,
		"redirect": s.redirects, "release": s.releases, "transfer": s.transfers, "burst": s.bursts} {
		need(t, what, n)
	}
	t.Logf("%d seeds: %s", len(ws), s.line())
}

// With failovers that lose the last k acknowledged writes (k drawn per
// failover, besides what the lagging replica lacked) and empty restarts of
// one shard or the whole store, overlaps happen. Each ends within TTL +
// margin of true time (checked at every turn) and is logged by the node
// that overlapped (checked at the end), as the runtime would log it.
func TestSim_LostWritesOverlapBoundedAndCounted(t *testing.T) {
	t.Parallel()
	ws := runConfig(t, configs()[1], seeds())
	s := total(ws)
	for what, n := range map[string]int{"failover": s.failovers, "empty restart": s.restarts, "lost acknowledged write": s.lostAcked,
		"overlap": s.overlaps, "orphaned activation": s.orphans, "refusal while valid": s.refusedWhileValid,
		"incarnation fence": s.confirmFences, "logged incarnation change": s.incLogs} {
		need(t, what, n)
	}
	if b := ws[0].bound(); s.maxOverlap > b {
		t.Errorf("longest overlap %v over the bound %v", s.maxOverlap, b)
	}
	t.Logf("%d seeds: %s", len(ws), s.line())
}

// With WAIT (a write counts once the replica has it) a failover loses only
// writes nobody counted, so nothing may overlap even across failovers;
// only losing the replica too (a double failure) or an empty restart can,
// and then within the bound.
func TestSim_WaitForReplicaNoOverlapAcrossFailovers(t *testing.T) {
	t.Parallel()
	s := total(runConfig(t, configs()[2], seeds()))
	need(t, "failover", s.failovers)
	need(t, "lost unacknowledged write", s.lostWrites)
	need(t, "overlap after a double failure or restart", total(runConfig(t, configs()[3], seeds())).overlaps)
}

// Without faults nothing is lost and nothing may overlap; calls fail only
// for lost messages and moves.
func TestSim_NoFaultsNoOverlap(t *testing.T) {
	p := noLoss()
	p.faults = false
	for _, seed := range fixedSeeds[:4] {
		w := runSeed(t, seed, p)
		if w.st.overlaps != 0 || w.lossAt >= 0 || w.st.reregs != 0 {
			t.Errorf("seed %d: %d overlaps, %d re-registrations without faults", seed, w.st.overlaps, w.st.reregs)
		}
		if w.st.served < len(w.reqs)*9/10 {
			t.Errorf("seed %d: only %d of %d calls served without faults", seed, w.st.served, len(w.reqs))
		}
	}
}

// The harness can fail: with margin 0, a pause between the deadline check
// and the act lets an owner act after its lease expired and another node
// claimed the Spot. Every fixed seed must show it.
func TestSim_SelfCheckMarginZeroFails(t *testing.T) {
	t.Parallel()
	p := noLoss()
	p.fence.Margin = 0
	for _, seed := range fixedSeeds {
		w := newWorld(seed, p)
		w.run()
		found := false
		for _, pr := range w.problems {
			found = found || strings.Contains(pr, "with no write lost")
		}
		if !found {
			t.Errorf("seed %d: margin 0 passed: the simulation cannot see this fencing violation (%s)", seed, w.summary())
		}
	}
}

// A seed replays exactly.
func TestSim_Deterministic(t *testing.T) {
	a, b := newWorld(42, defaultParams()), newWorld(42, defaultParams())
	a.tracing, b.tracing = true, true
	a.run()
	b.run()
	if a.summary() != b.summary() || a.st != b.st || a.lastSteps(traceLen) != b.lastSteps(traceLen) || len(a.problems) != len(b.problems) {
		t.Fatalf("seed 42 ran twice differently:\n%s\n%s", a.summary(), b.summary())
	}
}

// -seeds N: N more seeds from the clock in every configuration, each
// printed on failure (go test ./test/sim -run MoreSeeds -seeds 500).
func TestSim_MoreSeeds(t *testing.T) {
	if *extraSeeds == 0 || *oneSeed != 0 {
		t.Skip("run with -seeds N for more seeds")
	}
	for _, c := range configs() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("%s: %s", c.name, total(runConfig(t, c, moreSeeds())).line())
		})
	}
	t.Run("without confirm", func(t *testing.T) {
		t.Parallel()
		p := defaultParams()
		p.confirm = false
		for _, seed := range moreSeeds() {
			runSeed(t, seed, p)
		}
	})
}
