package placement

import "slices"

// Member is one Object Server as seen by placement.
type Member struct {
	// RID identifies the MeshNode. RIDs should be unique within a member
	// set; a repeated RID is ranked once, at its best eligible entry.
	RID string
	// Weight is the placement weight (not a Channel weight). 0 means the
	// member is never chosen. Shares are proportional to Weight among
	// eligible members.
	Weight uint32
	// Ready reports that the member accepts Spots.
	Ready bool
	// Draining reports that the member is handing its Spots away.
	Draining bool
}

// eligible reports whether m may own Spots.
func (m Member) eligible() bool {
	return m.Ready && !m.Draining && m.Weight > 0
}

// Owner returns the RID of the eligible member that should own the Spot
// (kind, id). ok is false when no member is eligible (ready, not draining,
// weight > 0). It does not allocate and does not modify members.
func Owner(kind, id string, members []Member) (rid string, ok bool) {
	prefix := spotPrefix(kind, id)
	var best float64
	for _, m := range members {
		if !m.eligible() {
			continue
		}
		s := score(prefix, m)
		if !ok || better(s, m.RID, best, rid) {
			rid, best, ok = m.RID, s, true
		}
	}
	return rid, ok
}

// Rank returns the RIDs of the eligible members for the Spot (kind, id),
// best first: Rank(...)[0] is Owner, and the rest is the fallback and
// handoff order (removing the owner makes the next RID the owner). Each RID
// appears once. It returns nil when no member is eligible.
func Rank(kind, id string, members []Member) []string {
	prefix := spotPrefix(kind, id)
	type cand struct {
		rid   string
		score float64
	}
	cands := make([]cand, 0, len(members))
	for _, m := range members {
		if m.eligible() {
			cands = append(cands, cand{m.RID, score(prefix, m)})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case better(a.score, a.rid, b.score, b.rid):
			return -1
		case better(b.score, b.rid, a.score, a.rid):
			return 1
		}
		return 0
	})
	out := make([]string, 0, len(cands))
	seen := make(map[string]struct{}, len(cands))
	for _, c := range cands {
		if _, dup := seen[c.rid]; dup {
			continue
		}
		seen[c.rid] = struct{}{}
		out = append(out, c.rid)
	}
	return out
}

// better reports whether a candidate with score sa and RID ra ranks before
// one with score sb and RID rb: higher score first, then smaller RID (byte
// order).
func better(sa float64, ra string, sb float64, rb string) bool {
	if sa != sb {
		return sa > sb
	}
	return ra < rb
}
