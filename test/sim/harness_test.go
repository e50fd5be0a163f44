package sim

import (
	"flag"
	"strings"
	"testing"
	"time"
)

var (
	extraSeeds = flag.Int("seeds", 0, "run this many more seeds (from the clock) in every configuration")
	oneSeed    = flag.Uint64("seed", 0, "run only this seed (replay a failure)")
	traceLines = flag.Int("steps", 40, "trace lines printed with a failure")
)

// fixedSeeds run in make test.
var fixedSeeds = []uint64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987}

// seeds are the fixed ones, only -seed if given, plus -seeds N more.
func seeds() []uint64 {
	if *oneSeed != 0 {
		return []uint64{*oneSeed}
	}
	out := append([]uint64{}, fixedSeeds...)
	base := uint64(time.Now().UnixNano())
	for i := 0; i < *extraSeeds; i++ {
		out = append(out, base+uint64(i)*0x9e3779b97f4a7c15)
	}
	return out
}

// runSeed runs one world and fails the test with the seed, its problems
// and the last steps before the first problem.
func runSeed(t *testing.T, seed uint64, p params) *world {
	t.Helper()
	w := newWorld(seed, p)
	w.run()
	if len(w.problems) > 0 {
		t.Errorf("seed %d: %d problems (rerun: go test ./test/sim -run '%s' -seed %d -steps 200)\nfirst: %s\n%s\nlast steps:\n%s",
			seed, len(w.problems), t.Name(), seed, w.problems[0], w.summary(), w.lastStepsBefore(*traceLines))
	}
	return w
}

// lastStepsBefore returns the trace up to the first problem when the ring
// still holds it, else the last steps.
func (w *world) lastStepsBefore(n int) string {
	lines := strings.Split(w.firstTrace, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// total sums the stats of several runs.
func total(ws []*world) stats {
	var s stats
	for _, w := range ws {
		a, b := &s, w.st
		a.turns += b.turns
		a.served += b.served
		a.overlaps += b.overlaps
		a.orphans += b.orphans
		a.maxOverlap = max(a.maxOverlap, b.maxOverlap)
		a.failovers += b.failovers
		a.restarts += b.restarts
		a.lostAcked += b.lostAcked
		a.crashes += b.crashes
		a.pauses += b.pauses
		a.cuts += b.cuts
		a.late += b.late
		a.refusedRenew += b.refusedRenew
		a.refusedWhileValid += b.refusedWhileValid
		a.tombRefusals += b.tombRefusals
		a.deadlineFences += b.deadlineFences
		a.reregs += b.reregs
		a.checksGone += b.checksGone
		a.casConflicts += b.casConflicts
		a.redirects += b.redirects
		a.activations += b.activations
		a.confirmFences += b.confirmFences
		a.incLogs += b.incLogs
		a.releases += b.releases
		a.transfers += b.transfers
		a.movesLog += b.movesLog
		a.bursts += b.bursts
		a.dupActivations += b.dupActivations
		a.events += b.events
	}
	return s
}
