package selection

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func seeded() *rand.Rand { return rand.New(rand.NewPCG(20250101, 7)) }

func ready(rid string, w uint16) Candidate { return Candidate{RID: rid, Weight: w, Ready: true} }

// chiSquare returns Σ (observed − expected)² / expected for picks
// distributed over the candidates in proportion to weights.
func chiSquare(t *testing.T, cands []Candidate, picks int) float64 {
	t.Helper()
	rng := seeded()
	counts := make([]int, len(cands))
	for range picks {
		d := PickOne(cands, rng)
		if d.Outcome != Picked || d.RID != cands[d.Index].RID {
			t.Fatalf("PickOne = %+v", d)
		}
		counts[d.Index]++
	}
	var total float64
	for _, c := range cands {
		total += float64(c.Weight)
	}
	var chi float64
	for i, c := range cands {
		exp := float64(picks) * float64(c.Weight) / total
		diff := float64(counts[i]) - exp
		chi += diff * diff / exp
	}
	return chi
}

func TestPickOne_DistributionMatchesWeights(t *testing.T) {
	tests := []struct {
		name     string
		cands    []Candidate
		critical float64 // chi-square critical value, p = 0.001
	}{
		{"100/300/600 with local", []Candidate{ready("a", 100), {RID: "self", Weight: 300, Ready: true, Local: true}, ready("c", 600)}, 13.816},
		{"1/10000", []Candidate{ready("a", 1), ready("b", 10000)}, 10.828},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if chi := chiSquare(t, tt.cands, 100_000); chi > tt.critical {
				t.Fatalf("chi-square %.3f above critical %.3f", chi, tt.critical)
			}
		})
	}
}

// The chi-square check can fail: an unweighted (uniform) pick is rejected.
func TestPickOne_ChiSquareDetectsUniformPick(t *testing.T) {
	cands := []Candidate{ready("a", 100), ready("b", 300), ready("c", 600)}
	rng := seeded()
	counts := make([]float64, 3)
	for range 100_000 {
		counts[rng.IntN(3)]++
	}
	var chi float64
	for i, c := range cands {
		exp := 100_000 * float64(c.Weight) / 1000
		chi += (counts[i] - exp) * (counts[i] - exp) / exp
	}
	if chi <= 13.816 {
		t.Fatalf("uniform pick passed the test (chi %.3f)", chi)
	}
}

func TestPickOne_SkipReasonsForEveryCandidate(t *testing.T) {
	cands := []Candidate{
		{RID: "notready", Weight: 100},
		{RID: "zero", Weight: 0, Ready: true},
		{RID: "drain", Weight: 100, Ready: true, Draining: true},
		{RID: "full", Weight: 100, Ready: true, Full: true},
		{RID: "ok", Weight: 100, Ready: true},
		{RID: "notready-draining-full", Weight: 0, Draining: true, Full: true},
		{RID: "draining-full", Weight: 100, Ready: true, Draining: true, Full: true},
		{RID: "full-zero", Weight: 0, Ready: true, Full: true},
	}
	want := []Skip{SkipNotReady, SkipWeightZero, SkipDraining, SkipAtCapacity, 0, SkipNotReady, SkipDraining, SkipAtCapacity}
	d := PickOne(cands, seeded())
	if d.Outcome != Picked || d.Index != 4 || d.RID != "ok" {
		t.Fatalf("PickOne = %+v", d)
	}
	if len(d.Considered) != len(cands) {
		t.Fatalf("%d considered for %d candidates", len(d.Considered), len(cands))
	}
	for i, c := range d.Considered {
		if c.RID != cands[i].RID || c.Weight != cands[i].Weight || c.Skip != want[i] {
			t.Errorf("considered[%d] = %+v, want skip %v", i, c, want[i])
		}
	}
}

func TestPickOne_NoTargetVersusBusy(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		want  Outcome
	}{
		{"no candidates", nil, NoTarget},
		{"only weight 0", []Candidate{ready("a", 0), ready("b", 0)}, NoTarget},
		{"weight 0 and full", []Candidate{{RID: "a", Weight: 0, Ready: true, Full: true}}, NoTarget},
		{"not ready", []Candidate{{RID: "a", Weight: 100}}, NoTarget},
		{"draining", []Candidate{{RID: "a", Weight: 100, Ready: true, Draining: true}}, NoTarget},
		{"draining and full", []Candidate{{RID: "a", Weight: 100, Ready: true, Draining: true, Full: true}}, NoTarget},
		{"all positive full", []Candidate{{RID: "a", Weight: 100, Ready: true, Full: true}, ready("b", 0)}, Busy},
		{"full local", []Candidate{{RID: "a", Weight: 1, Ready: true, Full: true, Local: true}}, Busy},
		{"one with headroom", []Candidate{{RID: "a", Weight: 100, Ready: true, Full: true}, ready("b", 1)}, Picked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := PickOne(tt.cands, seeded())
			if d.Outcome != tt.want {
				t.Fatalf("outcome %v, want %v", d.Outcome, tt.want)
			}
			if tt.want != Picked && (d.Index != -1 || d.RID != "") {
				t.Fatalf("no pick but Index %d RID %q", d.Index, d.RID)
			}
		})
	}
}

func TestPickOne_LocalIsAnOrdinaryCandidate(t *testing.T) {
	d := PickOne([]Candidate{{RID: "self", Weight: 5, Ready: true, Local: true}}, seeded())
	if d.Outcome != Picked || d.RID != "self" {
		t.Fatalf("local only: %+v", d)
	}
}

func TestPickOne_TenThousandMaxWeightMembers(t *testing.T) {
	cands := make([]Candidate, 10_000)
	for i := range cands {
		cands[i] = ready("n"+strconv.Itoa(i), MaxWeight)
	}
	rng := seeded()
	halves := [2]int{}
	for range 200 {
		d := PickOne(cands, rng)
		if d.Outcome != Picked {
			t.Fatalf("PickOne = %v", d.Outcome)
		}
		halves[d.Index*2/len(cands)]++
	}
	if halves[0] < 60 || halves[1] < 60 {
		t.Fatalf("picks per half %v: not spread over all members", halves)
	}
}

// A weight sum above 2^32 (440 000 members of weight 10000): a 32-bit sum
// would wrap to about 1.05e8 and only ever reach the first ~10 500 members.
func TestPickOne_SumBeyond32Bits(t *testing.T) {
	cands := make([]Candidate, 440_000)
	for i := range cands {
		cands[i] = Candidate{RID: "n", Weight: MaxWeight, Ready: true}
	}
	rng := seeded()
	far := 0
	for range 20 {
		d := PickOne(cands, rng)
		if d.Index >= 10_500 {
			far++
		}
	}
	if far < 15 {
		t.Fatalf("only %d of 20 picks beyond the first 10 500 members", far)
	}
}

func TestMulticast(t *testing.T) {
	cands := []Candidate{
		{RID: "self", Weight: 100, Ready: true, Local: true},
		{RID: "a", Weight: 1, Ready: true},
		{RID: "b", Weight: 10000, Ready: true},
		{RID: "full", Weight: 100, Ready: true, Full: true},
		{RID: "zero", Weight: 0, Ready: true},
		{RID: "drain", Weight: 100, Ready: true, Draining: true},
		{RID: "down", Weight: 100},
	}
	targets, considered := Multicast(cands)
	wantTargets := []int{1, 2, 3}
	if len(targets) != len(wantTargets) {
		t.Fatalf("targets %v, want %v", targets, wantTargets)
	}
	for i := range targets {
		if targets[i] != wantTargets[i] {
			t.Fatalf("targets %v, want %v", targets, wantTargets)
		}
	}
	wantSkips := []Skip{SkipLocal, 0, 0, 0, SkipWeightZero, SkipDraining, SkipNotReady}
	for i, c := range considered {
		if c.RID != cands[i].RID || c.Skip != wantSkips[i] {
			t.Errorf("considered[%d] = %+v, want skip %v", i, c, wantSkips[i])
		}
	}
}

func TestMulticast_RepeatedRIDPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a repeated RID")
		}
	}()
	Multicast([]Candidate{ready("a", 1), ready("a", 2)})
}

func TestEnumStrings(t *testing.T) {
	want := map[Skip]string{SkipNotReady: "not ready", SkipWeightZero: "weight 0", SkipDraining: "draining", SkipAtCapacity: "at capacity", SkipLocal: "local", 0: "eligible"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("Skip(%d) = %q, want %q", s, s.String(), w)
		}
	}
	if Picked.String() != "picked" || NoTarget.String() != "no target" || Busy.String() != "busy" || Outcome(0).String() != "outcome(0)" {
		t.Error("Outcome strings")
	}
}
