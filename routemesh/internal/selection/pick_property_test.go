package selection

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

func genCandidates(t *rapid.T) []Candidate {
	n := rapid.IntRange(0, 12).Draw(t, "n")
	cands := make([]Candidate, n)
	for i := range cands {
		cands[i] = Candidate{
			RID:      string(rune('a' + i)),
			Weight:   uint16(rapid.SampledFrom([]int{0, 1, 2, 100, 9999, MaxWeight}).Draw(t, "weight")),
			Ready:    rapid.Bool().Draw(t, "ready"),
			Draining: rapid.Bool().Draw(t, "draining"),
			Full:     rapid.Bool().Draw(t, "full"),
			Local:    rapid.Bool().Draw(t, "local"),
		}
	}
	return cands
}

// PickOne against a naive oracle: the pick is always eligible, every
// eligible candidate can be picked, and the outcome follows the rules.
func TestPickOne_MatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cands := genCandidates(t)
		eligible, busy := map[int]bool{}, false
		for i, c := range cands {
			if c.Ready && !c.Draining && c.Weight > 0 {
				if c.Full {
					busy = true
				} else {
					eligible[i] = true
				}
			}
		}
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		seen := map[int]bool{}
		for range 200 {
			d := PickOne(cands, rng)
			if len(d.Considered) != len(cands) {
				t.Fatalf("considered %d of %d", len(d.Considered), len(cands))
			}
			for i, c := range d.Considered {
				if (c.Skip == 0) != eligible[i] {
					t.Fatalf("candidate %d %+v: skip %v", i, cands[i], c.Skip)
				}
			}
			switch {
			case len(eligible) > 0:
				if d.Outcome != Picked || !eligible[d.Index] || d.RID != cands[d.Index].RID {
					t.Fatalf("decision %+v, eligible %v", d, eligible)
				}
				seen[d.Index] = true
			case busy:
				if d.Outcome != Busy {
					t.Fatalf("outcome %v, want busy", d.Outcome)
				}
			default:
				if d.Outcome != NoTarget {
					t.Fatalf("outcome %v, want no target", d.Outcome)
				}
			}
		}
		// With 200 draws, each eligible candidate whose share is at least
		// 1/12 of the total is seen (miss probability below 1e-7 each).
		var total uint64
		for i := range eligible {
			total += uint64(cands[i].Weight)
		}
		for i := range eligible {
			if uint64(cands[i].Weight)*12 >= total && !seen[i] {
				t.Fatalf("eligible candidate %d (weight %d of %d) never picked", i, cands[i].Weight, total)
			}
		}
	})
}

func TestMulticast_MatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cands := genCandidates(t)
		targets, considered := Multicast(cands)
		var want []int
		for i, c := range cands {
			if !c.Local && c.Ready && !c.Draining && c.Weight > 0 {
				want = append(want, i)
			}
		}
		if len(targets) != len(want) {
			t.Fatalf("targets %v, want %v", targets, want)
		}
		for i := range want {
			if targets[i] != want[i] || considered[want[i]].Skip != 0 {
				t.Fatalf("targets %v, want %v", targets, want)
			}
		}
		for i, c := range considered {
			if c.RID != cands[i].RID {
				t.Fatalf("considered out of order")
			}
		}
	})
}
