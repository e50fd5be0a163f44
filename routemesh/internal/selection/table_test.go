package selection

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func member(rid string, gen, rev uint64, servers map[string]uint16) Member {
	return Member{RID: rid, Generation: gen, Revision: rev, Servers: servers}
}

func TestTable_RevisionRules(t *testing.T) {
	tb := NewTable()
	if !tb.Apply(member("a", 1, 5, map[string]uint16{"match": 100})) {
		t.Fatal("new RID not applied")
	}
	for _, rev := range []uint64{4, 5} {
		if tb.Apply(member("a", 1, rev, map[string]uint16{"match": 1})) {
			t.Fatalf("revision %d (not larger than 5) applied", rev)
		}
	}
	if got := tb.Snapshot().Servers("match"); len(got) != 1 || got[0].Weight != 100 {
		t.Fatalf("servers after ignored updates: %+v", got)
	}
	if !tb.Apply(member("a", 1, 6, map[string]uint16{"match": 7})) {
		t.Fatal("larger revision not applied")
	}
	if got := tb.Snapshot().Servers("match"); got[0].Weight != 7 {
		t.Fatalf("weight %d, want 7", got[0].Weight)
	}
	// A new generation replaces, whatever its revision or numeric size.
	if !tb.Apply(member("a", 9, 1, map[string]uint16{"lobby": 0})) {
		t.Fatal("new generation not applied")
	}
	v := tb.Snapshot()
	if got := v.Servers("match"); len(got) != 0 {
		t.Fatalf("old generation's channel still served: %+v", got)
	}
	if got := v.Servers("lobby"); len(got) != 1 || got[0] != (Target{RID: "a", Weight: 0}) {
		t.Fatalf("lobby: %+v", got)
	}
	if !tb.Apply(member("a", 2, 1, map[string]uint16{"lobby": 3})) {
		t.Fatal("numerically smaller generation is still a different lifecycle")
	}
	// Remove only the held generation.
	if tb.Remove("a", 9) || tb.Remove("zz", 2) {
		t.Fatal("removal of a late generation or unknown RID changed the table")
	}
	if !tb.Remove("a", 2) {
		t.Fatal("removal of the held generation failed")
	}
	if _, ok := tb.Snapshot().Member("a"); ok {
		t.Fatal("member still present after Remove")
	}
}

func TestTable_ServersSortedPerChannel(t *testing.T) {
	tb := NewTable()
	tb.Apply(member("c", 1, 1, map[string]uint16{"match": 3}))
	tb.Apply(Member{RID: "a", Generation: 1, Revision: 1, Servers: map[string]uint16{"match": 1, "lobby": 2}, Local: true})
	tb.Apply(member("b", 1, 1, map[string]uint16{"match": 2}))
	tb.Apply(member("client-only", 1, 1, nil))
	v := tb.Snapshot()
	want := []Target{{"a", 1, true}, {"b", 2, false}, {"c", 3, false}}
	if got := v.Servers("match"); !slices.Equal(got, want) {
		t.Fatalf("match = %+v, want %+v", got, want)
	}
	if got := v.Servers("lobby"); !slices.Equal(got, []Target{{"a", 2, true}}) {
		t.Fatalf("lobby = %+v", got)
	}
	if got := v.Servers("none"); len(got) != 0 {
		t.Fatalf("unknown channel = %+v", got)
	}
	m, ok := v.Member("client-only")
	if !ok || m.Servers == nil || len(m.Servers) != 0 {
		t.Fatalf("client-only member = %+v %v", m, ok)
	}
	if got := v.Members(); len(got) != 4 || got[0].RID != "a" || got[3].RID != "client-only" {
		t.Fatalf("Members = %+v", got)
	}
}

func TestTable_SnapshotImmutable(t *testing.T) {
	tb := NewTable()
	servers := map[string]uint16{"match": 100}
	tb.Apply(member("a", 1, 1, servers))
	before := tb.Snapshot()

	servers["match"] = 1 // the caller's map is not shared
	tb.Apply(member("a", 1, 2, map[string]uint16{"match": 50, "lobby": 5}))
	tb.Apply(member("b", 1, 1, map[string]uint16{"match": 10}))
	tb.Remove("a", 1)

	if got := before.Servers("match"); !slices.Equal(got, []Target{{"a", 100, false}}) {
		t.Fatalf("old view changed: %+v", got)
	}
	if m, _ := before.Member("a"); m.Revision != 1 || m.Servers["match"] != 100 || len(m.Servers) != 1 {
		t.Fatalf("old view member changed: %+v", m)
	}
	// Results handed out are copies.
	got := before.Servers("match")
	got[0].Weight = 9
	m, _ := before.Member("a")
	m.Servers["match"] = 9
	if before.Servers("match")[0].Weight != 100 {
		t.Fatal("Servers result aliases the view")
	}
	if m2, _ := before.Member("a"); m2.Servers["match"] != 100 {
		t.Fatal("Member result aliases the view")
	}
	if now := tb.Snapshot().Servers("match"); !slices.Equal(now, []Target{{"b", 10, false}}) {
		t.Fatalf("current view: %+v", now)
	}
}

func TestMember_Validate(t *testing.T) {
	bad := []Member{
		member("", 1, 1, nil),
		member("a", 0, 1, nil),
		member("a", 1, 0, nil),
		member("a", 1, 1, map[string]uint16{"": 1}),
		member("a", 1, 1, map[string]uint16{"m": MaxWeight + 1}),
	}
	for _, m := range bad {
		if err := m.Validate(); !errors.Is(err, ErrInvalidMember) {
			t.Errorf("Validate(%+v) = %v", m, err)
		}
		func() {
			defer func() {
				if err, _ := recover().(error); !errors.Is(err, ErrInvalidMember) {
					t.Errorf("Apply(%+v) panic = %v", m, err)
				}
			}()
			NewTable().Apply(m)
		}()
	}
	if err := member("a", 1, 1, map[string]uint16{"m": 0, "n": MaxWeight}).Validate(); err != nil {
		t.Fatalf("valid member: %v", err)
	}
}

// Readers take snapshots while the writer applies changes; every view they
// see is internally consistent (run with -race).
func TestTable_ConcurrentReaders(t *testing.T) {
	tb := NewTable()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				v := tb.Snapshot()
				for _, tg := range v.Servers("match") {
					m, ok := v.Member(tg.RID)
					if !ok || m.Servers["match"] != tg.Weight {
						t.Errorf("inconsistent view: target %+v member %+v", tg, m)
						return
					}
				}
			}
		})
	}
	for i := range 2000 {
		rid := string(rune('a' + i%7))
		tb.Apply(member(rid, uint64(1+i%3), uint64(1+i), map[string]uint16{"match": uint16(i % 100)}))
		if i%5 == 0 {
			tb.Remove(rid, uint64(1+i%3))
		}
	}
	close(done)
	wg.Wait()
}

// Table against a naive map oracle under random Apply/Remove sequences.
func TestTable_MatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tb := NewTable()
		oracle := map[string]Member{}
		rids := []string{"a", "b", "c", "d"}
		channels := []string{"match", "lobby", "chat"}
		var views []*View
		var frozen []map[string]Member
		for range rapid.IntRange(1, 50).Draw(t, "steps") {
			rid := rapid.SampledFrom(rids).Draw(t, "rid")
			gen := rapid.Uint64Range(1, 3).Draw(t, "gen")
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				want := false
				if m, ok := oracle[rid]; ok && m.Generation == gen {
					delete(oracle, rid)
					want = true
				}
				if got := tb.Remove(rid, gen); got != want {
					t.Fatalf("Remove(%s, %d) = %v, want %v", rid, gen, got, want)
				}
			} else {
				m := Member{RID: rid, Generation: gen, Revision: rapid.Uint64Range(1, 5).Draw(t, "rev"),
					Servers: map[string]uint16{}, Local: rid == "a"}
				for _, ch := range channels {
					if rapid.Bool().Draw(t, "serves") {
						m.Servers[ch] = uint16(rapid.IntRange(0, MaxWeight).Draw(t, "weight"))
					}
				}
				old, had := oracle[rid]
				want := !had || old.Generation != gen || m.Revision > old.Revision
				if want {
					oracle[rid] = m.clone()
				}
				if got := tb.Apply(m); got != want {
					t.Fatalf("Apply(%+v) = %v, want %v (held %+v)", m, got, want, old)
				}
			}
			views = append(views, tb.Snapshot())
			frozen = append(frozen, maps.Clone(oracle))
		}
		// Every view taken along the way still shows the state of its time.
		for i, v := range views {
			checkView(t, v, frozen[i], channels)
		}
	})
}

func checkView(t *rapid.T, v *View, want map[string]Member, channels []string) {
	for _, ch := range channels {
		var exp []Target
		for _, rid := range slices.Sorted(maps.Keys(want)) {
			if w, ok := want[rid].Servers[ch]; ok {
				exp = append(exp, Target{RID: rid, Weight: w, Local: want[rid].Local})
			}
		}
		got := v.Servers(ch)
		if !slices.Equal(got, exp) || !slices.IsSortedFunc(got, func(a, b Target) int { return strings.Compare(a.RID, b.RID) }) {
			t.Fatalf("Servers(%s) = %+v, want %+v", ch, got, exp)
		}
	}
	if len(v.Members()) != len(want) {
		t.Fatalf("%d members, want %d", len(v.Members()), len(want))
	}
	for rid, m := range want {
		got, ok := v.Member(rid)
		if !ok || got.Generation != m.Generation || got.Revision != m.Revision || !maps.Equal(got.Servers, m.Servers) {
			t.Fatalf("Member(%s) = %+v %v, want %+v", rid, got, ok, m)
		}
	}
}

// Knows says whether the view holds a member's generation at a revision
// or later, as Member would, without copying it.
func TestView_Knows(t *testing.T) {
	tb := NewTable()
	tb.Apply(Member{RID: "a", Generation: 7, Revision: 3, Servers: map[string]uint16{"match": 1}})
	v := tb.Snapshot()
	for _, c := range []struct {
		rid      string
		gen, rev uint64
		want     bool
	}{
		{"a", 7, 3, true}, {"a", 7, 2, true}, {"a", 7, 4, false}, {"a", 8, 1, false}, {"b", 7, 1, false},
	} {
		if got := v.Knows(c.rid, c.gen, c.rev); got != c.want {
			t.Errorf("Knows(%s, %d, %d) = %v, want %v", c.rid, c.gen, c.rev, got, c.want)
		}
	}
}
