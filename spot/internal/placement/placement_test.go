package placement

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func ready(rid string, w uint32) Member { return Member{RID: rid, Weight: w, Ready: true} }

func TestOwner_Eligibility(t *testing.T) {
	tests := []struct {
		name    string
		members []Member
		wantOK  bool
		want    string
	}{
		{"nil", nil, false, ""},
		{"empty", []Member{}, false, ""},
		{"not ready", []Member{{RID: "a", Weight: 1}}, false, ""},
		{"draining", []Member{{RID: "a", Weight: 1, Ready: true, Draining: true}}, false, ""},
		{"weight zero", []Member{{RID: "a", Ready: true}}, false, ""},
		{"all ineligible", []Member{
			{RID: "a", Weight: 1},
			{RID: "b", Weight: 1, Ready: true, Draining: true},
			{RID: "c", Ready: true},
		}, false, ""},
		{"only eligible wins", []Member{
			{RID: "a", Weight: math.MaxUint32},
			{RID: "b", Weight: math.MaxUint32, Ready: true, Draining: true},
			{RID: "c", Ready: true},
			ready("d", 1),
		}, true, "d"},
		{"max weight", []Member{ready("a", math.MaxUint32)}, true, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 200 {
				id := fmt.Sprint(i)
				got, ok := Owner("player", id, tc.members)
				if ok != tc.wantOK || got != tc.want {
					t.Fatalf("Owner(%q) = %q, %v; want %q, %v", id, got, ok, tc.want, tc.wantOK)
				}
				r := Rank("player", id, tc.members)
				if !tc.wantOK && r != nil {
					t.Fatalf("Rank(%q) = %q, want nil", id, r)
				}
				if tc.wantOK && (len(r) != 1 || r[0] != tc.want) {
					t.Fatalf("Rank(%q) = %q, want [%q]", id, r, tc.want)
				}
			}
		})
	}
}

func TestRank_DuplicateRIDRankedOnce(t *testing.T) {
	members := []Member{ready("a", 1), ready("b", 1), ready("a", 50), {RID: "a", Weight: 9}}
	for i := range 100 {
		r := Rank("room", fmt.Sprint(i), members)
		if len(r) != 2 || r[0] == r[1] {
			t.Fatalf("Rank = %q, want a and b once each", r)
		}
		if o, _ := Owner("room", fmt.Sprint(i), members); o != r[0] {
			t.Fatalf("Owner = %q, Rank[0] = %q", o, r[0])
		}
	}
}

func TestBetter_TieBreakByRID(t *testing.T) {
	tests := []struct {
		sa   float64
		ra   string
		sb   float64
		rb   string
		want bool
	}{
		{2, "z", 1, "a", true},
		{1, "a", 2, "z", false},
		{1, "a", 1, "b", true},
		{1, "b", 1, "a", false},
		{1, "a", 1, "a", false},
		{1, "A", 1, "a", true}, // byte order, not case-folded
		{1, "ab", 1, "abc", true},
	}
	for _, tc := range tests {
		if got := better(tc.sa, tc.ra, tc.sb, tc.rb); got != tc.want {
			t.Errorf("better(%v, %q, %v, %q) = %v, want %v", tc.sa, tc.ra, tc.sb, tc.rb, got, tc.want)
		}
	}
}

// TestOwner_Golden pins owners so an accidental change of the hash, the
// score or the tie-break is caught. Owners must never change silently: all
// nodes of a mesh have to agree.
func TestOwner_Golden(t *testing.T) {
	three := []Member{ready("node-a", 1), ready("node-b", 2), ready("node-c", 7)}
	equal := []Member{ready("rid-1", 100), ready("rid-2", 100), ready("rid-3", 100), ready("rid-4", 100)}
	tests := []struct {
		kind, id string
		members  []Member
		want     string
	}{
		{"player", "1", three, "node-a"},
		{"player", "42", three, "node-b"},
		{"player", "43", three, "node-c"},
		{"player", "44", three, "node-c"},
		{"room", "lobby/7", three, "node-c"},
		{"room", "", three, "node-c"},
		{"player", "42", equal, "rid-4"},
		{"player", "43", equal, "rid-4"},
		{"guild", "wolves", equal, "rid-1"},
		{"guild", "ravens", equal, "rid-2"},
	}
	for _, tc := range tests {
		if got, _ := Owner(tc.kind, tc.id, tc.members); got != tc.want {
			t.Errorf("Owner(%q, %q, %v) = %q, want %q", tc.kind, tc.id, tc.members, got, tc.want)
		}
	}
	wantRank := []string{"rid-4", "rid-2", "rid-3", "rid-1"}
	if got := Rank("player", "42", equal); !slices.Equal(got, wantRank) {
		t.Errorf("Rank(player, 42, equal) = %q, want %q", got, wantRank)
	}
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("spot-%d", i)
	}
	return out
}

// fataler is the part of *testing.T and *rapid.T that owners needs.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func owners(t fataler, kind string, ids []string, members []Member) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		o, ok := Owner(kind, id, members)
		if !ok {
			t.Fatalf("Owner(%q, %q) found no owner among %v", kind, id, members)
		}
		out[i] = o
	}
	return out
}

func without(members []Member, i int) []Member {
	return append(slices.Clone(members[:i]), members[i+1:]...)
}

func TestOwner_MinimalMovement(t *testing.T) {
	members := []Member{
		ready("node-a", 100), ready("node-b", 100), ready("node-c", 300),
		ready("node-d", 50), ready("node-e", 100), ready("node-f", 1000),
	}
	keys := ids(5000)
	before := owners(t, "player", keys, members)

	t.Run("remove", func(t *testing.T) {
		for i, gone := range members {
			after := owners(t, "player", keys, without(members, i))
			moved := 0
			for k, id := range keys {
				if after[k] == before[k] {
					continue
				}
				moved++
				if before[k] != gone.RID {
					t.Fatalf("removing %s moved %s from %s to %s", gone.RID, id, before[k], after[k])
				}
				if r := Rank("player", id, members); after[k] != r[1] {
					t.Fatalf("removing %s moved %s to %s, want next in rank %s", gone.RID, id, after[k], r[1])
				}
			}
			if owned := count(before, gone.RID); moved != owned {
				t.Fatalf("removing %s moved %d keys, it owned %d", gone.RID, moved, owned)
			}
		}
	})
	t.Run("add", func(t *testing.T) {
		added := ready("node-g", 200)
		after := owners(t, "player", keys, append(slices.Clone(members), added))
		moved := 0
		for k, id := range keys {
			if after[k] != before[k] {
				moved++
				if after[k] != added.RID {
					t.Fatalf("adding %s moved %s from %s to %s", added.RID, id, before[k], after[k])
				}
			}
		}
		if moved == 0 {
			t.Fatal("adding a member took no keys")
		}
	})
	t.Run("ineligible equals removed", func(t *testing.T) {
		for _, mut := range []func(*Member){
			func(m *Member) { m.Ready = false },
			func(m *Member) { m.Draining = true },
			func(m *Member) { m.Weight = 0 },
		} {
			flagged := slices.Clone(members)
			mut(&flagged[2])
			if !slices.Equal(owners(t, "player", keys, flagged), owners(t, "player", keys, without(members, 2))) {
				t.Fatalf("flagging %+v differs from removing it", flagged[2])
			}
		}
	})
}

func count(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// chiSquare returns Pearson's statistic for the owner counts of members
// against shares proportional to their weights.
func chiSquare(t *testing.T, members []Member, n int) float64 {
	t.Helper()
	got := owners(t, "player", ids(n), members)
	var total float64
	for _, m := range members {
		total += float64(m.Weight)
	}
	var chi float64
	for _, m := range members {
		exp := float64(n) * float64(m.Weight) / total
		d := float64(count(got, m.RID)) - exp
		chi += d * d / exp
	}
	return chi
}

func TestOwner_Proportional(t *testing.T) {
	tests := []struct {
		name     string
		members  []Member
		n        int
		critical float64 // chi-square critical value at p = 0.001, len(members)-1 dof
	}{
		{"weights 1:2:7", []Member{ready("node-a", 1), ready("node-b", 2), ready("node-c", 7)}, 30000, 13.816},
		{"equal weights", []Member{ready("rid-1", 100), ready("rid-2", 100), ready("rid-3", 100), ready("rid-4", 100)}, 20000, 16.266},
		{"large weights 1:3", []Member{ready("x", 1<<30), ready("y", 3<<30)}, 20000, 10.828},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if chi := chiSquare(t, tc.members, tc.n); chi > tc.critical {
				t.Fatalf("chi-square = %.3f > %.3f: shares not proportional to weights", chi, tc.critical)
			}
		})
	}
}

// TestOwner_ProportionalDetectsSkew shows the chi-square check can fail:
// the same ids placed with weights 1:2:7 do not fit shares of 1:1:1.
func TestOwner_ProportionalDetectsSkew(t *testing.T) {
	got := owners(t, "player", ids(30000), []Member{ready("node-a", 1), ready("node-b", 2), ready("node-c", 7)})
	var chi float64
	for _, rid := range []string{"node-a", "node-b", "node-c"} {
		d := float64(count(got, rid)) - 10000
		chi += d * d / 10000
	}
	if chi <= 13.816 {
		t.Fatalf("chi-square against equal shares = %.3f, want > 13.816", chi)
	}
}

// genMembers draws 1..10 members with distinct RIDs and mixed eligibility.
func genMembers(t *rapid.T, label string) []Member {
	rids := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9-]{1,12}`), 1, 10, rapid.ID[string]).Draw(t, label+"-rids")
	out := make([]Member, len(rids))
	for i, rid := range rids {
		out[i] = Member{
			RID: rid,
			Weight: rapid.OneOf(
				rapid.Uint32Range(0, 10),
				rapid.Uint32Range(1, 1000),
				rapid.Uint32(),
			).Draw(t, "weight"),
			Ready:    rapid.Float64Range(0, 1).Draw(t, "ready") < 0.85,
			Draining: rapid.Float64Range(0, 1).Draw(t, "draining") < 0.15,
		}
	}
	return out
}

// oracleOwner is a naive restatement of the algorithm: the full hash per
// member and math.Log. It returns the owner and whether the top two scores
// are too close for math.Log and portableLog to be sure to agree.
func oracleOwner(kind, id string, members []Member) (rid string, ok, nearTie bool) {
	best, second := math.Inf(-1), math.Inf(-1)
	for _, m := range members {
		if !m.Ready || m.Draining || m.Weight == 0 {
			continue
		}
		s := -float64(m.Weight) / math.Log(unit(hash64(kind, id, m.RID)))
		switch {
		case !ok || s > best || (s == best && m.RID < rid):
			second, best, rid, ok = best, s, m.RID, true
		case s > second:
			second = s
		}
	}
	return rid, ok, ok && best-second <= 1e-9*best
}

func TestRapid_OwnerRankInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, "m")
		kind := rapid.StringN(0, 8, -1).Draw(t, "kind")
		id := rapid.StringN(0, 16, -1).Draw(t, "id")

		owner, ok := Owner(kind, id, members)
		rank := Rank(kind, id, members)

		var eligible []string
		for _, m := range members {
			if m.Ready && !m.Draining && m.Weight > 0 {
				eligible = append(eligible, m.RID)
			}
		}
		if ok != (len(eligible) > 0) {
			t.Fatalf("Owner ok = %v with %d eligible", ok, len(eligible))
		}
		if !ok {
			if owner != "" || rank != nil {
				t.Fatalf("no eligible member: Owner = %q, Rank = %q", owner, rank)
			}
			return
		}
		if rank[0] != owner {
			t.Fatalf("Owner = %q, Rank[0] = %q", owner, rank[0])
		}
		if !slices.Equal(slices.Sorted(slices.Values(rank)), slices.Sorted(slices.Values(eligible))) {
			t.Fatalf("Rank = %q, eligible = %q", rank, eligible)
		}
		if want, _, near := oracleOwner(kind, id, members); !near && want != owner {
			t.Fatalf("Owner = %q, oracle = %q", owner, want)
		}

		// Order of the member slice does not matter.
		shuffled := rapid.Permutation(members).Draw(t, "shuffled")
		if o, _ := Owner(kind, id, shuffled); o != owner {
			t.Fatalf("shuffled Owner = %q, want %q", o, owner)
		}
		if r := Rank(kind, id, shuffled); !slices.Equal(r, rank) {
			t.Fatalf("shuffled Rank = %q, want %q", r, rank)
		}
		// Same input, same answer.
		if o, _ := Owner(kind, id, slices.Clone(members)); o != owner {
			t.Fatalf("repeated Owner = %q, want %q", o, owner)
		}
	})
}

func TestRapid_MinimalMovement(t *testing.T) {
	keys := ids(100)
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, "m")
		for i := range members {
			members[i].Weight = rapid.Uint32Range(1, 1000).Draw(t, "w")
			members[i].Ready, members[i].Draining = true, false
		}
		before := owners(t, "k", keys, members)

		if len(members) > 1 {
			i := rapid.IntRange(0, len(members)-1).Draw(t, "remove")
			after := owners(t, "k", keys, without(members, i))
			for k := range keys {
				if after[k] != before[k] && before[k] != members[i].RID {
					t.Fatalf("removing %s moved %s from %s to %s", members[i].RID, keys[k], before[k], after[k])
				}
			}
		}

		added := Member{RID: "new-" + rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "new"), Weight: rapid.Uint32Range(1, 1000).Draw(t, "new-w"), Ready: true}
		after := owners(t, "k", keys, append(slices.Clone(members), added))
		for k := range keys {
			if after[k] != before[k] && after[k] != added.RID {
				t.Fatalf("adding %s moved %s from %s to %s", added.RID, keys[k], before[k], after[k])
			}
		}

		// Raising one member's weight only moves keys to it.
		j := rapid.IntRange(0, len(members)-1).Draw(t, "raise")
		raised := slices.Clone(members)
		raised[j].Weight += rapid.Uint32Range(1, 1000).Draw(t, "delta")
		after = owners(t, "k", keys, raised)
		for k := range keys {
			if after[k] != before[k] && after[k] != members[j].RID {
				t.Fatalf("raising %s moved %s from %s to %s", members[j].RID, keys[k], before[k], after[k])
			}
		}
	})
}
