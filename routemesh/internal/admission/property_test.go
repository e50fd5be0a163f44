package admission

import (
	"testing"

	"pgregory.net/rapid"
)

// Check never installs a pipe and agrees with Admit on every refusal.
func TestCheck_AgreesWithAdmit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		local := rapid.SampledFrom([]string{"a", "m", "z"}).Draw(t, "local")
		m := New(ident(local, 1), nil)
		n := rapid.IntRange(1, 40).Draw(t, "steps")
		for step := range n {
			rid := rapid.SampledFrom([]string{"b", "n", "m"}).Draw(t, "peer")
			gen := rapid.Uint64Range(1, 2).Draw(t, "gen")
			p := Pipe{ID: rid + string(rune('a'+step)), Outbound: rapid.Bool().Draw(t, "outbound")}
			if p.Outbound {
				p.Intent = &Intent{Endpoint: rid, ConfigGeneration: 1}
			}
			auth := rapid.Bool().Draw(t, "auth")
			curID, curGen, had := m.Current(rid)
			c := m.Check(p, ident(rid, gen), auth)
			if id, g, ok := m.Current(rid); id != curID || g != curGen || ok != had {
				t.Fatalf("Check changed the current pipe")
			}
			if rapid.Bool().Draw(t, "admit") {
				d := m.Admit(p, ident(rid, gen), auth)
				if c.Verdict != Accept && c != d {
					t.Fatalf("Check %+v but Admit %+v", c, d)
				}
				if d.Verdict == Replace && Arbiter(local, rid) {
					t.Fatalf("the arbiter replaced a ready pipe: %+v", d)
				}
				if d.Verdict == Duplicate && !Arbiter(local, rid) {
					t.Fatalf("the follower refused a duplicate: %+v", d)
				}
			}
			if rapid.Bool().Draw(t, "close") {
				m.PipeClosed(p.ID)
			}
		}
	})
}

// Whatever sequence of pipes, closes and losses a machine sees, it holds at
// most one current pipe per peer, IsCurrent agrees with Current, and a
// generation different from the current one is never accepted.
func TestAdmit_InvariantsUnderRandomEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := New(ident("m", 1), nil)
		peers := []string{"a", "n", "z"}
		pipes := map[string]bool{}
		n := rapid.IntRange(1, 60).Draw(t, "steps")
		for step := range n {
			rid := rapid.SampledFrom(peers).Draw(t, "peer")
			gen := rapid.Uint64Range(1, 3).Draw(t, "gen")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				id := rid + "-" + string(rune('0'+step%10)) + string(rune('a'+step/10))
				p := Pipe{ID: id, Outbound: rapid.Bool().Draw(t, "outbound")}
				if p.Outbound {
					p.Intent = &Intent{Endpoint: rid, ConfigGeneration: 1}
				}
				curID, curGen, had := m.Current(rid)
				d := m.Admit(p, ident(rid, gen), true)
				switch {
				case had && curGen != gen && d.Verdict != Defer:
					t.Fatalf("generation %d admitted over current %d: %+v", gen, curGen, d)
				case had && curGen == gen && d.Verdict != Duplicate && d.Verdict != Replace:
					t.Fatalf("same generation second pipe: %+v", d)
				case d.Verdict == Replace && d.Close != curID:
					t.Fatalf("Replace closes %q, current was %q", d.Close, curID)
				case !had && d.Verdict != Accept:
					t.Fatalf("first pipe: %+v", d)
				}
				pipes[id] = true
			case 2:
				if len(pipes) > 0 {
					ids := make([]string, 0, len(pipes))
					for id := range pipes {
						ids = append(ids, id)
					}
					m.PipeClosed(rapid.SampledFrom(ids).Draw(t, "close"))
				}
			case 3:
				m.PeerLost(rid, gen)
			}
			currents := 0
			for id := range pipes {
				if m.IsCurrent(id) {
					currents++
				}
			}
			total := 0
			for _, rid := range peers {
				if id, _, ok := m.Current(rid); ok {
					total++
					if !m.IsCurrent(id) {
						t.Fatalf("Current(%s) = %q but IsCurrent is false", rid, id)
					}
				}
			}
			if currents != total {
				t.Fatalf("%d current pipes for %d peers", currents, total)
			}
		}
	})
}
