package selection

import (
	"math/rand/v2"
	"strconv"
)

// MaxWeight is the largest channel weight.
const MaxWeight = 10000

// Skip says why a candidate is not a target.
type Skip uint8

const (
	// SkipNotReady: the member is not ready.
	SkipNotReady Skip = 1 + iota
	// SkipWeightZero: the member's weight is 0.
	SkipWeightZero
	// SkipDraining: the member is draining.
	SkipDraining
	// SkipAtCapacity: the member reported itself full (select-one only).
	SkipAtCapacity
	// SkipLocal: the local node is never a Logical Multicast target.
	SkipLocal
)

// String returns "not ready", "weight 0", "draining", "at capacity" or
// "local".
func (s Skip) String() string {
	switch s {
	case 0:
		return "eligible"
	case SkipNotReady:
		return "not ready"
	case SkipWeightZero:
		return "weight 0"
	case SkipDraining:
		return "draining"
	case SkipAtCapacity:
		return "at capacity"
	case SkipLocal:
		return "local"
	default:
		return "skip(" + strconv.Itoa(int(s)) + ")"
	}
}

// Outcome is the result of PickOne.
type Outcome uint8

const (
	// Picked: Decision.Index names the chosen candidate.
	Picked Outcome = 1 + iota
	// NoTarget: no ready, non-draining candidate with weight > 0 exists.
	NoTarget
	// Busy: such candidates exist but all reported themselves full.
	Busy
)

// String returns "picked", "no target" or "busy".
func (o Outcome) String() string {
	switch o {
	case Picked:
		return "picked"
	case NoTarget:
		return "no target"
	case Busy:
		return "busy"
	default:
		return "outcome(" + strconv.Itoa(int(o)) + ")"
	}
}

// Candidate is one Server member of a channel as the caller sees it now.
type Candidate struct {
	RID      string
	Weight   uint16 // 0..MaxWeight
	Ready    bool   // the member's connection (or the local node) is ready
	Draining bool   // the member is draining
	Full     bool   // the member reported no admission headroom
	Local    bool   // the member is this node
}

// Considered records what selection thought of one candidate.
type Considered struct {
	RID    string
	Weight uint16
	Skip   Skip // 0 = eligible
}

// Decision is the result of PickOne.
type Decision struct {
	Index      int // index into the candidates; -1 unless Outcome is Picked
	RID        string
	Outcome    Outcome
	Considered []Considered // one entry per candidate, in candidate order
}

// skipOne is the select-one filter: readiness, drain and capacity first,
// then weight > 0.
func skipOne(c Candidate) Skip {
	switch {
	case !c.Ready:
		return SkipNotReady
	case c.Draining:
		return SkipDraining
	case c.Full:
		return SkipAtCapacity
	case c.Weight == 0:
		return SkipWeightZero
	}
	return 0
}

// PickOne chooses one candidate with probability proportional to its weight
// among the ready, non-draining, not-full candidates with weight > 0. The
// local node is a candidate like any other. The weight sum is 64-bit and
// cannot overflow. If no candidate is eligible, the outcome is Busy when
// some ready, non-draining candidate with weight > 0 was only full, and
// NoTarget otherwise.
func PickOne(cands []Candidate, rng *rand.Rand) Decision {
	d := Decision{Considered: Consider(cands)}
	d.Index, d.Outcome = Pick(cands, rng)
	if d.Index >= 0 {
		d.RID = cands[d.Index].RID
	}
	return d
}

// Consider returns why each candidate is or is not eligible for
// select-one, in candidate order (for monitoring).
func Consider(cands []Candidate) []Considered {
	out := make([]Considered, len(cands))
	for i, c := range cands {
		out[i] = Considered{RID: c.RID, Weight: c.Weight, Skip: skipOne(c)}
	}
	return out
}

// Pick is PickOne without the per-candidate report: the index chosen (-1
// when none) and the outcome. It allocates nothing; the hot call path uses
// it and builds the report only when monitoring asks for one.
func Pick(cands []Candidate, rng *rand.Rand) (int, Outcome) {
	var total uint64
	busy := false
	for _, c := range cands {
		switch s := skipOne(c); {
		case s == 0:
			total += uint64(c.Weight)
		case s == SkipAtCapacity && c.Weight > 0:
			busy = true
		}
	}
	if total == 0 {
		if busy {
			return -1, Busy
		}
		return -1, NoTarget
	}
	r := rng.Uint64N(total)
	for i, c := range cands {
		if skipOne(c) != 0 {
			continue
		}
		if r < uint64(c.Weight) {
			return i, Picked
		}
		r -= uint64(c.Weight)
	}
	panic("selection: weighted pick ran past the total")
}

// skipMulticast is the Logical Multicast filter: remote, ready, not
// draining, weight > 0. Capacity is not a filter: a full member answers
// busy itself.
func skipMulticast(c Candidate) Skip {
	switch {
	case c.Local:
		return SkipLocal
	case !c.Ready:
		return SkipNotReady
	case c.Draining:
		return SkipDraining
	case c.Weight == 0:
		return SkipWeightZero
	}
	return 0
}

// Multicast returns the indexes of every eligible remote member, each once,
// whatever its weight: remote (Local excluded), ready, not draining, weight
// > 0. Full members are targets: they answer busy themselves, never a
// silent skip. considered has one entry per candidate. Candidates must have
// distinct RIDs; a repeated RID panics.
func Multicast(cands []Candidate) (targets []int, considered []Considered) {
	considered = make([]Considered, len(cands))
	seen := make(map[string]struct{}, len(cands))
	for i, c := range cands {
		if _, dup := seen[c.RID]; dup {
			panic("selection: Multicast candidates repeat RID " + strconv.Quote(c.RID))
		}
		seen[c.RID] = struct{}{}
		s := skipMulticast(c)
		considered[i] = Considered{RID: c.RID, Weight: c.Weight, Skip: s}
		if s == 0 {
			targets = append(targets, i)
		}
	}
	return targets, considered
}
