package timers

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Unix(1_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestMachine_OneShotFiresOnceAtItsDueTime(t *testing.T) {
	m := New()
	k := Key{Act: 1, Name: "a"}
	tag := new(int)
	gen := m.Set(k, at(100), 0, tag)
	if f, next := m.Tick(at(99), nil); len(f) != 0 || !next.Equal(at(100)) {
		t.Fatalf("before due: %v next %v", f, next)
	}
	f, next := m.Tick(at(100), nil)
	if len(f) != 1 || f[0].Key != k || f[0].Gen != gen || f[0].Tag != tag || !next.IsZero() {
		t.Fatalf("at due: %v next %v", f, next)
	}
	if !m.Taken(k, gen) || m.Len() != 0 {
		t.Fatalf("not taken, %d left", m.Len())
	}
	if f, _ := m.Tick(at(10_000), nil); len(f) != 0 {
		t.Fatalf("a one-shot timer fired again: %v", f)
	}
}

func TestMachine_RepeatingIsFixedRateAndMergesAStall(t *testing.T) {
	m := New()
	k := Key{Act: 1, Name: "tick"}
	gen := m.Set(k, at(50), 50*time.Millisecond, nil)
	f, next := m.Tick(at(60), nil)
	if len(f) != 1 || f[0].Merged != 0 || !next.Equal(at(100)) {
		t.Fatalf("first: %v next %v (want it back at 100 at once)", f, next)
	}
	if m.Taken(k, gen) {
		t.Fatal("a repeating timer was taken: Tick puts it back itself")
	}
	// Ticked late, at 130: the firing of 100.
	if f, next = m.Tick(at(130), nil); len(f) != 1 || f[0].Merged != 0 || !next.Equal(at(150)) {
		t.Fatalf("late: %v next %v, want one firing and 150 on the grid", f, next)
	}
	// A stall of the clock: ticked only at 420 — one firing standing
	// for 150, 200, …, 400 (five).
	f, _ = m.Tick(at(420), nil)
	if len(f) != 1 || f[0].Merged != 5 {
		t.Fatalf("after a stall: %v, want one firing merging 5", f)
	}
	if due, _, _, _ := m.Due(k); !due.Equal(at(450)) {
		t.Fatalf("next due %v, want 450", due)
	}
}

func TestMachine_CancelReplaceAndRetry(t *testing.T) {
	m := New()
	k := Key{Act: 7, Name: "a"}
	old := m.Set(k, at(10), 0, nil)
	f, _ := m.Tick(at(10), nil)
	if len(f) != 1 {
		t.Fatal("did not fire")
	}
	gen := m.Set(k, at(30), 0, nil) // replaced while its firing was in flight
	if m.Taken(k, old) {
		t.Fatal("a stale firing was taken")
	}
	f, _ = m.Tick(at(30), nil)
	if len(f) != 1 || f[0].Gen != gen {
		t.Fatalf("replacement: %v", f)
	}
	if !m.Retry(k, gen, at(45)) { // the mailbox was full
		t.Fatal("retry refused")
	}
	if f, next := m.Tick(at(44), nil); len(f) != 0 || !next.Equal(at(45)) {
		t.Fatalf("retry fired early: %v next %v", f, next)
	}
	if f, _ = m.Tick(at(45), nil); len(f) != 1 {
		t.Fatal("retry did not fire")
	}
	m.Set(Key{Act: 7, Name: "b"}, at(100), time.Second, nil)
	m.Set(Key{Act: 8, Name: "a"}, at(100), 0, nil)
	if n := m.CancelAll(7); n != 2 || m.Len() != 1 {
		t.Fatalf("cancel all: %d, %d left", n, m.Len())
	}
	if m.Cancel(Key{Act: 7, Name: "b"}) {
		t.Fatal("cancelled twice")
	}
}

// The machine against a naive oracle under random schedules: no firing
// before its due time or off a repeating timer's grid, none of a cancelled
// or replaced generation, each due time of a repeating timer fired or
// merged exactly once, and Tick's next time the earliest due time of a
// timer that can fire.
func TestMachine_MatchesOracle(t *testing.T) {
	type timer struct {
		gen     uint64
		first   time.Time
		period  time.Duration
		pending bool
		nextDue time.Time
		covered int // due times fired or merged
	}
	rapid.Check(t, func(t *rapid.T) {
		m := New()
		now := t0
		oracle := map[Key]*timer{}
		var inflight []Firing
		names := []string{"a", "b", "c"}
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			k := Key{Act: uint64(rapid.IntRange(1, 3).Draw(t, "act")), Name: rapid.SampledFrom(names).Draw(t, "name")}
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				d := time.Duration(rapid.IntRange(0, 200).Draw(t, "due")) * time.Millisecond
				p := time.Duration(rapid.IntRange(0, 3).Draw(t, "period")*25) * time.Millisecond
				gen := m.Set(k, now.Add(d), p, nil)
				oracle[k] = &timer{gen: gen, first: now.Add(d), period: p, nextDue: now.Add(d)}
			case 1:
				if m.Cancel(k) != (oracle[k] != nil) {
					t.Fatalf("cancel %v disagrees with the oracle", k)
				}
				delete(oracle, k)
			case 2, 3:
				now = now.Add(time.Duration(rapid.IntRange(0, 120).Draw(t, "advance")) * time.Millisecond)
				fired, next := m.Tick(now, nil)
				for _, f := range fired {
					o := oracle[f.Key]
					if o == nil || o.gen != f.Gen || o.pending {
						t.Fatalf("%v fired (gen %d) but the oracle has %+v", f.Key, f.Gen, o)
					}
					if o.nextDue.After(now) {
						t.Fatalf("%v fired at %v before its due time %v", f.Key, now, o.nextDue)
					}
					o.covered += 1 + f.Merged
					if o.period == 0 {
						o.pending = true
						inflight = append(inflight, f)
						continue
					}
					o.nextDue = o.nextDue.Add(time.Duration(1+f.Merged) * o.period)
					if !o.nextDue.After(now) {
						t.Fatalf("%v: next due %v not after now %v", f.Key, o.nextDue, now)
					}
					// Every due time from the first up to now was fired or merged once.
					if want := int(now.Sub(o.first)/o.period) + 1; o.covered != want {
						t.Fatalf("%v: %d due times covered by %v, want %d", f.Key, o.covered, now, want)
					}
				}
				var want time.Time
				for _, o := range oracle {
					if !o.pending && (want.IsZero() || o.nextDue.Before(want)) {
						want = o.nextDue
					}
				}
				if !next.Equal(want) {
					t.Fatalf("next %v, oracle %v", next, want)
				}
			case 4, 5:
				if len(inflight) == 0 {
					continue
				}
				f := inflight[0]
				inflight = inflight[1:]
				o := oracle[f.Key]
				ok := m.Taken(f.Key, f.Gen)
				if ok != (o != nil && o.gen == f.Gen) {
					t.Fatalf("taken %v gen %d: %v, oracle %+v", f.Key, f.Gen, ok, o)
				}
				if ok {
					delete(oracle, f.Key)
				}
			}
		}
	})
}
