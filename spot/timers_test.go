package spot_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// The timer kind of these tests: "arm" starts the timers a request names,
// "tick" is what they deliver, "left" lists them.
type tmState struct {
	Ticks  int64
	Rounds int64
	Where  []string // the node each tick ran on
}

type arm struct {
	Name           string
	DueMs, EveryMs int64
	Cancel, Reset  bool
}

var (
	armP   = wire.NewPacket[arm, struct{}]("arm")
	tickP  = wire.NewPacket[string, struct{}]("tick")
	ticksP = wire.NewPacket[struct{}, tmState]("ticks")
	leftP  = wire.NewPacket[struct{}, map[string]int64]("left") // name → ms left
	slowP  = wire.NewPacket[int64, struct{}]("slow")
	// armSlowP starts a one-shot timer due at once, then holds the turn
	// until the clock found the mailbox full (at most that many ms).
	armSlowP = wire.NewPacket[int64, struct{}]("arm-slow")
)

// timerFires counts each timer's firings across the test's nodes.
type timerFires struct {
	mu     sync.Mutex
	n      map[string]int
	source map[string]bool
}

func (f *timerFires) add(name, source string) {
	f.mu.Lock()
	f.n[name]++
	f.source[source] = true
	f.mu.Unlock()
}

func (f *timerFires) get(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[name]
}

func timerKind(f *timerFires, g *gauge) *spot.Kind[tmState] {
	k := spot.NewKind("timed", func(string) *tmState { return &tmState{} })
	spot.On(k, armP, func(c *spot.Context, s *tmState, a arm) (struct{}, error) {
		g.in(c)
		defer g.out(c)
		switch {
		case a.Cancel:
			if !c.CancelTimer(a.Name) {
				return struct{}{}, fmt.Errorf("no timer %s", a.Name)
			}
			return struct{}{}, nil
		case a.Reset:
			if !c.ResetTimer(a.Name) {
				return struct{}{}, fmt.Errorf("no timer %s", a.Name)
			}
			return struct{}{}, nil
		}
		return struct{}{}, spot.StartTimerOf(c, a.Name, time.Duration(a.DueMs)*time.Millisecond,
			time.Duration(a.EveryMs)*time.Millisecond, tickP, a.Name)
	})
	spot.OnSend(k, tickP, func(c *spot.Context, s *tmState, name string) {
		g.in(c)
		defer g.out(c)
		f.add(name, c.Source)
		s.Ticks++
		v := s.Rounds
		time.Sleep(time.Millisecond) // a read-modify-write across a scheduler turn
		s.Rounds = v + 1
		if len(s.Where) == 0 || s.Where[len(s.Where)-1] != c.Node.RID() {
			s.Where = append(s.Where, c.Node.RID())
		}
	})
	spot.On(k, ticksP, func(c *spot.Context, s *tmState, _ struct{}) (tmState, error) {
		g.in(c)
		defer g.out(c)
		v := s.Rounds
		s.Rounds = v + 1
		return *s, nil
	})
	spot.On(k, leftP, func(c *spot.Context, s *tmState, _ struct{}) (map[string]int64, error) {
		out := map[string]int64{}
		for _, ti := range c.Timers() {
			out[ti.Name] = ti.Left.Milliseconds()
		}
		return out, nil
	})
	spot.On(k, armSlowP, func(c *spot.Context, s *tmState, ms int64) (struct{}, error) {
		if err := spot.StartTimerOf(c, "once", 0, 0, tickP, "once"); err != nil {
			return struct{}{}, err
		}
		for deadline := time.Now().Add(time.Duration(ms) * time.Millisecond); time.Now().Before(deadline); {
			if st, _ := spot.StatsOf(c.Node); st.TimerRetries > 0 {
				break
			}
			time.Sleep(time.Millisecond) // poll interval of a condition wait
		}
		return struct{}{}, nil
	})
	spot.On(k, slowP, func(c *spot.Context, s *tmState, ms int64) (struct{}, error) {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return struct{}{}, nil
	})
	return k
}

func timerNodes(t *testing.T, kind func() spot.Registration, n int) ([]*routemesh.Node, *routemesh.Node) {
	t.Helper()
	store := location.NewMemory()
	var servers []*routemesh.Node
	for i := range n {
		_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{kind()}})
		servers = append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	return servers, cl
}

// A one-shot timer fires once; a repeating one goes on until cancelled;
// a timer turn says so (Source "timer") and runs one at a time with the
// Spot's messages.
func TestTimers_FireAsTurnsOneAtATime(t *testing.T) {
	f := &timerFires{n: map[string]int{}, source: map[string]bool{}}
	g := newGauge()
	_, cl := timerNodes(t, func() spot.Registration { return timerKind(f, g) }, 1)
	ctx := ctxT(t, 30*time.Second)
	if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "once", DueMs: 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "tick", DueMs: 1, EveryMs: 5}); err != nil {
		t.Fatal(err)
	}
	// Messages interleave with the firings.
	for range 50 {
		if _, err := spot.Call(ctx, cl, "timed", "t", ticksP, struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "20 ticks and the one-shot", 10*time.Second, func() bool { return f.get("tick") >= 20 && f.get("once") == 1 })
	if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "tick", Cancel: true}); err != nil {
		t.Fatal(err)
	}
	st, err := spot.Call(ctx, cl, "timed", "t", ticksP, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	// After the cancel no tick runs: the next message sees the same count.
	st2, err := spot.Call(ctx, cl, "timed", "t", ticksP, struct{}{})
	if err != nil || st2.Ticks != st.Ticks {
		t.Fatalf("ticks after the cancel: %d then %d (%v)", st.Ticks, st2.Ticks, err)
	}
	if st2.Rounds != st2.Ticks+52 {
		t.Fatalf("rounds %d, want %d: a timer turn overlapped another turn", st2.Rounds, st2.Ticks+52)
	}
	if f.get("once") != 1 || !f.source[spot.SourceTimer] || len(f.source) != 1 {
		t.Fatalf("one-shot fired %d times, sources %v", f.get("once"), f.source)
	}
	if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "once", Cancel: true}); err == nil {
		t.Fatal("a fired one-shot timer was still there to cancel")
	}
	g.check(t)
}

// A timer is data the kind can run: a packet without a handler, a period
// under a millisecond or a Spot over its timer limit is refused.
func TestTimers_Refused(t *testing.T) {
	k := spot.NewKind("timed", func(string) *tmState { return &tmState{} })
	spot.On(k, armP, func(c *spot.Context, s *tmState, a arm) (struct{}, error) {
		if err := c.StartTimer(spot.Timer{Name: "x", Packet: "nope"}); !errors.Is(err, spot.ErrConfig) {
			return struct{}{}, fmt.Errorf("no handler: %v", err)
		}
		if err := c.StartTimer(spot.Timer{Name: "x", Packet: "arm", Period: time.Microsecond}); !errors.Is(err, spot.ErrConfig) {
			return struct{}{}, fmt.Errorf("short period: %v", err)
		}
		for i := range spot.MaxTimers {
			if err := c.StartTimer(spot.Timer{Name: fmt.Sprint(i), Packet: "arm", Due: time.Hour}); err != nil {
				return struct{}{}, err
			}
		}
		if err := c.StartTimer(spot.Timer{Name: "one-more", Packet: "arm", Due: time.Hour}); !errors.Is(err, spot.ErrConfig) {
			return struct{}{}, fmt.Errorf("over the limit: %v", err)
		}
		return struct{}{}, nil
	})
	_, cl := timerNodes(t, func() spot.Registration { return k }, 1)
	if _, err := spot.Call(ctxT(t, 10*time.Second), cl, "timed", "t", armP, arm{}); err != nil {
		t.Fatal(err)
	}
}

// A firing that finds the previous one still waiting behind a slow turn is
// merged into it and counted; the timer keeps its rate afterwards.
func TestTimers_PendingFiringsMerge(t *testing.T) {
	f := &timerFires{n: map[string]int{}, source: map[string]bool{}}
	g := newGauge()
	servers, cl := timerNodes(t, func() spot.Registration { return timerKind(f, g) }, 1)
	ctx := ctxT(t, 30*time.Second)
	if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "tick", DueMs: 1, EveryMs: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, cl, "timed", "t", slowP, 100); err != nil { // 50 due times pass meanwhile
		t.Fatal(err)
	}
	waitFor(t, "merged firings counted", 10*time.Second, func() bool {
		st, _ := spot.StatsOf(servers[0])
		return st.TimersMerged > 0
	})
	before := f.get("tick")
	waitFor(t, "the timer ticking on", 10*time.Second, func() bool { return f.get("tick") > before+5 })
}

// A timer turn is not use: a Spot whose only activity is its timer is
// deactivated when idle, and its timers stop with it — unless the kind
// says timers keep it active.
func TestTimers_IdleSpotStopsItsTimers(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			f := &timerFires{n: map[string]int{}, source: map[string]bool{}}
			g := newGauge()
			servers, cl := timerNodes(t, func() spot.Registration {
				k := timerKind(f, g).SetIdleTimeout(100 * time.Millisecond)
				if keep {
					k.SetTimersKeepActive()
				}
				return k
			}, 1)
			ctx := ctxT(t, 30*time.Second)
			if _, err := spot.Call(ctx, cl, "timed", "t", armP, arm{Name: "tick", DueMs: 1, EveryMs: 10}); err != nil {
				t.Fatal(err)
			}
			if !keep {
				waitFor(t, "the idle Spot deactivated", 10*time.Second, func() bool {
					ids, _ := spot.Active(servers[0], "timed", 10)
					return len(ids) == 0
				})
				n := f.get("tick")
				// A message activates it again, without its old timers:
				// it sees the ticks stopped.
				st, err := spot.Call(ctx, cl, "timed", "t", ticksP, struct{}{})
				if err != nil || st.Ticks != 0 || f.get("tick") != n {
					t.Fatalf("after deactivation: %+v, %d ticks then %d (%v)", st, n, f.get("tick"), err)
				}
				return
			}
			// Forty ticks span four idle timeouts: still the same activation.
			waitFor(t, "40 ticks", 10*time.Second, func() bool { return f.get("tick") >= 40 })
			st, err := spot.Call(ctx, cl, "timed", "t", ticksP, struct{}{})
			if err != nil || st.Ticks < 40 {
				t.Fatalf("a Spot kept active by its timer: %+v (%v)", st, err)
			}
		})
	}
}

// A move carries the timers, repeating and one-shot, with the time each
// had left, to the new owner, where they go on.
func TestTimers_MoveCarriesThem(t *testing.T) {
	f := &timerFires{n: map[string]int{}, source: map[string]bool{}}
	g := newGauge()
	servers, cl := timerNodes(t, func() spot.Registration {
		return timerKind(f, g).Persist(spot.Persistence{Version: 1})
	}, 2)
	ctx := ctxT(t, 30*time.Second)
	if _, err := spot.Call(ctx, cl, "timed", "m", armP, arm{Name: "tick", DueMs: 1, EveryMs: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, cl, "timed", "m", armP, arm{Name: "later", DueMs: 60_000}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ticks", 10*time.Second, func() bool { return f.get("tick") >= 3 })
	var from, to *routemesh.Node
	for i, s := range servers {
		if ids, _ := spot.Active(s, "timed", 10); len(ids) == 1 {
			from, to = s, servers[1-i]
		}
	}
	if from == nil {
		t.Fatal("the Spot is active nowhere")
	}
	if err := spot.Move(ctx, from, "timed", "m", to.RID()); err != nil {
		t.Fatal(err)
	}
	n := f.get("tick")
	waitFor(t, "ticks on the new owner", 10*time.Second, func() bool { return f.get("tick") >= n+5 })
	st, err := spot.Call(ctx, cl, "timed", "m", ticksP, struct{}{})
	if err != nil || len(st.Where) < 2 || st.Where[len(st.Where)-1] != to.RID() {
		t.Fatalf("ticks ran on %v, want the new owner %s last (%v)", st.Where, to.RID(), err)
	}
	left, err := spot.Call(ctx, cl, "timed", "m", leftP, struct{}{})
	if err != nil || left["later"] <= 0 || left["later"] > 60_000 || left["tick"] > 10 {
		t.Fatalf("timers after the move: %v (%v); want later with under a minute left, tick on its period", left, err)
	}
}

// A firing that finds the Spot's mailbox full is counted and, for a
// one-shot timer, tried again: it still fires, once, after the turn that
// filled the mailbox.
func TestTimers_FullMailboxRetriesAOneShot(t *testing.T) {
	f := &timerFires{n: map[string]int{}, source: map[string]bool{}}
	g := newGauge()
	servers, cl := timerNodes(t, func() spot.Registration { return timerKind(f, g).SetMailbox(1, 1<<20) }, 1)
	ctx := ctxT(t, 30*time.Second)
	// The turn that starts the timer fills the one-message budget while
	// the timer comes due.
	if _, err := spot.Call(ctx, cl, "timed", "t", armSlowP, 5000); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the one-shot fired once after a retry", 10*time.Second, func() bool {
		st, _ := spot.StatsOf(servers[0])
		return st.TimerRetries > 0 && f.get("once") == 1
	})
	if n := f.get("once"); n != 1 {
		t.Fatalf("the one-shot fired %d times", n)
	}
}
