package spot_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// The reentrant kinds of these tests. Each handler marks the stretches in
// which it runs code on the Spot's state (gauge.in … gauge.out); an
// outbound call is outside them. A Spot runs one turn at a time when no
// two such stretches of one Spot ever overlap.

type reState struct {
	N   int64
	Log []string
}

type fanReq struct {
	Kind, Back string
	K          int
}

type chainReq struct {
	Hops []hop // the Spots still to call, in order
}

type hop struct{ Kind, ID string }

var (
	incP   = wire.NewPacket[struct{}, int64]("inc")
	fanP   = wire.NewPacket[fanReq, int64]("fan")
	toP    = wire.NewPacket[fanReq, int64]("to") // ask Back's kind/ID "fan" with K
	chainP = wire.NewPacket[chainReq, int64]("chain")
	holdP  = wire.NewPacket[fanReq, int64]("hold")
	readP  = wire.NewPacket[struct{}, reState]("read")
)

// gauge counts, per Spot, the turns running code at this moment.
type gauge struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
}

func newGauge() *gauge { return &gauge{running: map[string]int{}, most: map[string]int{}} }

func (g *gauge) in(c *spot.Context) {
	k := c.Kind + "/" + c.ID
	g.mu.Lock()
	g.running[k]++
	g.most[k] = max(g.most[k], g.running[k])
	g.mu.Unlock()
}

func (g *gauge) out(c *spot.Context) {
	g.mu.Lock()
	g.running[c.Kind+"/"+c.ID]--
	g.mu.Unlock()
}

// check fails the test when any Spot ran two turns at once.
func (g *gauge) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, n := range g.most {
		if n > 1 {
			t.Errorf("spot %s ran %d turns at once", k, n)
		}
	}
	if len(g.most) == 0 {
		t.Error("no turn was recorded")
	}
}

// slowInc is a read-modify-write spread over a few scheduler turns: two
// turns at once lose an update (and the race detector sees them).
func slowInc(s *reState) int64 {
	v := s.N
	time.Sleep(2 * time.Millisecond)
	s.N = v + 1
	return s.N
}

// reHooks are a test's hooks into reKind's handlers.
type reHooks struct {
	gate   func(c *spot.Context) // holds each inc until it returns
	onBusy func()                // a fan's call ended with ErrBusy
}

// reKind builds a reentrant kind name with gauge g.
func reKind(name string, g *gauge, hooks ...reHooks) *spot.Kind[reState] {
	var hk reHooks
	if len(hooks) > 0 {
		hk = hooks[0]
	}
	gate := hk.gate
	k := spot.NewKind(name, func(string) *reState { return &reState{} })
	k.SetReentrant()
	spot.On(k, incP, func(c *spot.Context, s *reState, _ struct{}) (int64, error) {
		g.in(c)
		defer g.out(c)
		if gate != nil {
			gate(c)
		}
		s.Log = append(s.Log, "inc")
		return slowInc(s), nil
	})
	// fan: K concurrent calls from this turn back to (Kind, Back).inc.
	spot.On(k, fanP, func(c *spot.Context, s *reState, r fanReq) (int64, error) {
		g.in(c)
		s.Log = append(s.Log, "fan")
		g.out(c)
		var wg sync.WaitGroup
		var sum, busy atomic.Int64
		errs := make(chan error, r.K)
		for range r.K {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := spot.Call(c, c.Node, r.Kind, r.Back, incP, struct{}{})
				switch {
				case err == nil:
					sum.Add(v)
				case errors.Is(err, zlink.ErrMailboxFull):
					busy.Add(1)
					if hk.onBusy != nil {
						hk.onBusy()
					}
				default:
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return 0, err
		}
		return busy.Load(), nil
	})
	// to: ask (Kind, Back) to fan back to this Spot.
	spot.On(k, toP, func(c *spot.Context, s *reState, r fanReq) (int64, error) {
		g.in(c)
		s.Log = append(s.Log, "to")
		g.out(c)
		busy, err := spot.Call(c, c.Node, r.Kind, r.Back, fanP, fanReq{Kind: c.Kind, Back: c.ID, K: r.K})
		g.in(c)
		defer g.out(c)
		s.Log = append(s.Log, "back")
		return busy, err
	})
	// chain: increment, call the next hop, increment again.
	spot.On(k, chainP, func(c *spot.Context, s *reState, r chainReq) (int64, error) {
		g.in(c)
		slowInc(s)
		g.out(c)
		if len(r.Hops) > 0 {
			next := r.Hops[0]
			if _, err := spot.Call(c, c.Node, next.Kind, next.ID, chainP, chainReq{Hops: r.Hops[1:]}); err != nil {
				return 0, err
			}
		}
		g.in(c)
		defer g.out(c)
		return slowInc(s), nil
	})
	spot.On(k, readP, func(c *spot.Context, s *reState, _ struct{}) (reState, error) {
		g.in(c)
		defer g.out(c)
		return *s, nil
	})
	return k
}

// reCluster starts two Object Servers hosting kinds and an Object Client.
func reCluster(t *testing.T, store location.Store, kinds ...spot.Registration) *routemesh.Node {
	t.Helper()
	var nodes []*routemesh.Node
	for i := range 2 {
		_, n := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: kinds})
		nodes = append(nodes, n)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(nodes, cl)...)
	return cl
}

// a calls b; b's turn makes eight concurrent calls back to a. They run on
// a one at a time, inside a's waiting turn, and none is lost.
func TestReentry_FanBackRunsOneTurnAtATime(t *testing.T) {
	g := newGauge()
	cl := reCluster(t, location.NewMemory(), reKind("room", g))
	ctx := ctxT(t, 30*time.Second)
	const k = 8
	for round := range 3 {
		a, b := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
		busy, err := spot.Call(ctx, cl, "room", a, toP, fanReq{Kind: "room", Back: b, K: k})
		if err != nil || busy != 0 {
			t.Fatalf("a → b → a ×%d: %d busy, %v", k, busy, err)
		}
		st, err := spot.Call(ctx, cl, "room", a, readP, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		if st.N != k || len(st.Log) != k+2 || st.Log[0] != "to" || st.Log[k+1] != "back" {
			t.Fatalf("a's state %+v; want N=%d and to, %d × inc, back", st, k, k)
		}
	}
	g.check(t)
}

// a → b → a → b with two reentrant kinds: every visit runs inside the turn
// it interleaves with, and each Spot ends with two increments per visit.
func TestReentry_ChainThroughTwoReentrantKinds(t *testing.T) {
	g := newGauge()
	cl := reCluster(t, location.NewMemory(), reKind("ra", g), reKind("rb", g))
	ctx := ctxT(t, 30*time.Second)
	hops := []hop{{"rb", "b"}, {"ra", "a"}, {"rb", "b"}}
	if _, err := spot.Call(ctx, cl, "ra", "a", chainP, chainReq{Hops: hops}); err != nil {
		t.Fatalf("a → b → a → b: %v", err)
	}
	for _, h := range []hop{{"ra", "a"}, {"rb", "b"}} {
		st, err := spot.Call(ctx, cl, h.Kind, h.ID, readP, struct{}{})
		if err != nil || st.N != 4 {
			t.Fatalf("%s/%s: N=%d, %v; want 4 (two visits, two increments each)", h.Kind, h.ID, st.N, err)
		}
	}
	g.check(t)
}

// While a's turn waits on b, an ordinary call to a waits in a's mailbox;
// the calls of a's own chain run inside the waiting turn, the ordinary one
// only after that turn ends.
func TestReentry_OrdinaryCallWaitsForTheTurnReentrantOnesDoNot(t *testing.T) {
	g := newGauge()
	var servers []*routemesh.Node
	release := make(chan struct{})
	var holding atomic.Bool
	k := reKind("room", g)
	spot.On(k, holdP, func(c *spot.Context, s *reState, r fanReq) (int64, error) {
		g.in(c)
		s.Log = append(s.Log, "hold")
		holding.Store(true)
		g.out(c)
		<-release // the test queues an ordinary call meanwhile
		busy, err := spot.Call(c, c.Node, r.Kind, r.Back, fanP, fanReq{Kind: c.Kind, Back: c.ID, K: r.K})
		g.in(c)
		defer g.out(c)
		s.Log = append(s.Log, "back")
		return busy, err
	})
	store := location.NewMemory()
	for i := range 2 {
		_, n := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{k}})
		servers = append(servers, n)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	ctx := ctxT(t, 30*time.Second)

	held := make(chan error, 1)
	go func() {
		_, err := spot.Call(ctx, cl, "room", "a", holdP, fanReq{Kind: "room", Back: "b", K: 4})
		held <- err
	}()
	waitFor(t, "a's turn holding", 10*time.Second, holding.Load)
	ordinary := make(chan error, 1)
	go func() {
		_, err := spot.Call(ctx, cl, "room", "a", incP, struct{}{})
		ordinary <- err
	}()
	waitFor(t, "the ordinary call queued behind a's turn", 10*time.Second, func() bool {
		for _, s := range servers {
			if spot.MailboxDepth(s, "room", "a") >= 2 {
				return true
			}
		}
		return false
	})
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-ordinary; err != nil {
		t.Fatal(err)
	}
	st, err := spot.Call(ctx, cl, "room", "a", readP, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hold", "inc", "inc", "inc", "inc", "back", "inc"}
	if st.N != 5 || fmt.Sprint(st.Log) != fmt.Sprint(want) {
		t.Fatalf("a's state %+v; want N=5 and %v", st, want)
	}
	g.check(t)
}

// Reentrant deliveries count against the Spot's mailbox budget: past it
// they end with ErrMailboxFull (and never run); the ones admitted all run.
func TestReentry_DeliveriesCountAgainstTheMailboxBudget(t *testing.T) {
	g := newGauge()
	const k = 8
	var busySeen atomic.Int64
	var once sync.Once
	kind := reKind("room", g, reHooks{
		// The first inc holds a's turn until every call of the fan has
		// either been admitted (its turn, a's waiting turn and the rest
		// are what the mailbox counts) or refused.
		gate: func(c *spot.Context) {
			once.Do(func() {
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) {
					if busySeen.Load()+spot.MailboxDepth(c.Node, c.Kind, c.ID)-1 >= k {
						return
					}
					time.Sleep(time.Millisecond)
				}
				t.Error("the fan's calls were neither admitted nor refused within 10 s")
			})
		},
		onBusy: func() { busySeen.Add(1) },
	})
	kind.SetMailbox(3, 1<<20)
	cl := reCluster(t, location.NewMemory(), kind)
	ctx := ctxT(t, 30*time.Second)
	busy, err := spot.Call(ctx, cl, "room", "a", toP, fanReq{Kind: "room", Back: "b", K: k})
	if err != nil {
		t.Fatal(err)
	}
	st, err := spot.Call(ctx, cl, "room", "a", readP, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if busy < 1 || st.N+busy != k {
		t.Fatalf("%d of %d refused (mailbox full), %d ran; want at least one refused and every other one run", busy, k, st.N)
	}
	g.check(t)
}

// With ReplyAfterWrite, a reentrant turn replies only after its state is
// saved: the caller never sees a value the store does not hold yet.
func TestReentry_ReplyAfterWriteHolds(t *testing.T) {
	g := newGauge()
	store := location.NewMemory()
	kind := reKind("room", g)
	kind.Persist(spot.Persistence{Version: 1, ReplyAfterWrite: true})
	var stale atomic.Int64
	var seen atomic.Int64
	check := spot.NewKind("checker", func(string) *reState { return &reState{} })
	check.SetReentrant()
	// fan on the checker: K concurrent incs back, each checked against
	// the store right after its reply.
	spot.On(check, fanP, func(c *spot.Context, s *reState, r fanReq) (int64, error) {
		var wg sync.WaitGroup
		for range r.K {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := spot.Call(c, c.Node, r.Kind, r.Back, incP, struct{}{})
				if err != nil {
					stale.Add(1000)
					return
				}
				seen.Add(1)
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				st, err := store.GetSpotState(sctx, mesh, r.Kind, r.Back)
				var saved reState
				if err == nil {
					err = msgpack.Unmarshal(st.Data, &saved)
				}
				if err != nil || saved.N < v {
					stale.Add(1)
				}
			}()
		}
		wg.Wait()
		return 0, nil
	})
	cl := reCluster(t, store, kind, check)
	ctx := ctxT(t, 30*time.Second)
	if _, err := spot.Call(ctx, cl, "room", "a", toP, fanReq{Kind: "checker", Back: "c", K: 6}); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 6 || stale.Load() != 0 {
		t.Fatalf("%d replies seen, %d ahead of the store (or failed ×1000)", seen.Load(), stale.Load())
	}
	g.check(t)
}
