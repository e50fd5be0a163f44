package admission

import (
	"testing"

	"pgregory.net/rapid"
)

// Two nodes dial each other at the same time (A→B is pipe "ab", B→A is pipe
// "ba"). Each machine finishes the two handshakes in any order, and the
// closes one side performs reach the other side at any later point. Whatever
// the interleaving, both machines end with the same single current pipe.
func TestAdmit_SimultaneousDialsConverge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ridA := rapid.StringMatching(`[a-z0-9]{1,6}`).Draw(t, "ridA")
		ridB := rapid.StringMatching(`[a-z0-9]{1,6}`).Filter(func(s string) bool { return s != ridA }).Draw(t, "ridB")
		genA := rapid.Uint64Min(1).Draw(t, "genA")
		genB := rapid.Uint64Min(1).Draw(t, "genB")
		idA, idB := ident(ridA, genA), ident(ridB, genB)
		machines := map[string]*Machine{ridA: New(idA, nil), ridB: New(idB, nil)}
		identities := map[string]Identity{ridA: idA, ridB: idB}
		other := map[string]string{ridA: ridB, ridB: ridA}
		dialler := map[string]string{"ab": ridA, "ba": ridB}

		type event struct {
			node  string // the machine that sees the event
			pipe  string
			close bool // a close arriving from the other side; otherwise a finished handshake
		}
		pending := []event{{ridA, "ab", false}, {ridA, "ba", false}, {ridB, "ab", false}, {ridB, "ba", false}}
		closedAt := map[string]map[string]bool{ridA: {}, ridB: {}} // pipes each side knows are closed

		closeLocally := func(node, pipe string) {
			if pipe == "" || closedAt[node][pipe] {
				return
			}
			closedAt[node][pipe] = true
			machines[node].PipeClosed(pipe)
			pending = append(pending, event{other[node], pipe, true})
		}

		for len(pending) > 0 {
			i := rapid.IntRange(0, len(pending)-1).Draw(t, "event")
			ev := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			m := machines[ev.node]
			switch {
			case ev.close:
				if !closedAt[ev.node][ev.pipe] {
					closedAt[ev.node][ev.pipe] = true
					m.PipeClosed(ev.pipe)
				}
			case closedAt[ev.node][ev.pipe]:
				// The pipe died before its handshake finished here.
			default:
				p := Pipe{ID: ev.pipe, Outbound: dialler[ev.pipe] == ev.node}
				if p.Outbound {
					p.Intent = &Intent{Endpoint: "tcp://" + other[ev.node], ConfigGeneration: 1}
				}
				d := m.Admit(p, identities[other[ev.node]], true)
				switch d.Verdict {
				case Accept:
				case Replace, Duplicate:
					closeLocally(ev.node, d.Close)
				default:
					t.Fatalf("%s admitting %s: unexpected %+v", ev.node, ev.pipe, d)
				}
			}
		}

		want := "ab"
		if !Initiator(ridA, ridB) {
			want = "ba"
		}
		for node, m := range machines {
			id, gen, ok := m.Current(other[node])
			if !ok || id != want || gen != identities[other[node]].Generation {
				t.Fatalf("%s: current = %q/%d/%v, want %q", node, id, gen, ok, want)
			}
			if closedAt[node][want] {
				t.Fatalf("%s: surviving pipe %q was closed", node, want)
			}
			loser := map[string]string{"ab": "ba", "ba": "ab"}[want]
			if m.IsCurrent(loser) {
				t.Fatalf("%s: losing pipe %q is current", node, loser)
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
