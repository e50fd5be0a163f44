package sim

import (
	"testing"
)

// While the store loses no acknowledged write (partitions from some
// shards, crashes, pauses, drift, lost and late messages, releases and
// transfers, concurrent first calls — no failover), no two activations
// ever overlap, epochs strictly increase, and every call ends once.
func TestSim_NoLostWriteNoOverlap(t *testing.T) {
	var ws []*world
	for _, seed := range seeds() {
		w := runSeed(t, seed, noLoss())
		if w.st.overlaps != 0 || w.lossAt >= 0 {
			t.Errorf("seed %d: %d overlaps, loss at %v, without a lost write", seed, w.st.overlaps, w.lossAt)
		}
		ws = append(ws, w)
	}
	s := total(ws)
	t.Logf("%d seeds: %+v", len(ws), s)
}

// With failovers that lose the last k acknowledged writes and empty
// restarts, overlaps happen: each ends within TTL + margin and is logged
// by the node that overlapped.
func TestSim_LostWritesOverlapBoundedAndCounted(t *testing.T) {
	var ws []*world
	for _, seed := range seeds() {
		ws = append(ws, runSeed(t, seed, defaultParams()))
	}
	s := total(ws)
	t.Logf("%d seeds: %+v", len(ws), s)
}
