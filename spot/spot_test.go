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
)

// cluster is three Object Servers and one Object Client on one store.
type cluster struct {
	servers []*routemesh.Node
	client  *routemesh.Node
	led     *ledger
}

func newCluster(t *testing.T, store location.Store, idle time.Duration) *cluster {
	t.Helper()
	c := &cluster{led: newLedger()}
	for i := range 3 {
		_, n := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer,
			kinds: []spot.Registration{counterKind(c.led, idle)}})
		c.servers = append(c.servers, n)
	}
	_, c.client = startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(c.servers, c.client)...)
	return c
}

func (c *cluster) active() int64 {
	var n int64
	for _, s := range c.servers {
		st, _ := spot.StatsOf(s)
		for _, k := range st.Kinds {
			n += k.Active
		}
	}
	return n
}

func TestSpot_CallsReachOneActivationPerSpot(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	owners := map[string]string{}
	for i := range 60 {
		id := fmt.Sprintf("player-%d", i)
		for j := 1; j <= 3; j++ {
			got, res, err := callAdd(ctx, c.client, id, 1)
			if err != nil {
				t.Fatalf("%s add: %v", id, err)
			}
			if got != int64(j) {
				t.Fatalf("%s: value %d after %d adds", id, got, j)
			}
			if prev, ok := owners[id]; ok && prev != res.Owner {
				t.Fatalf("%s moved from %s to %s with a live owner", id, prev, res.Owner)
			}
			owners[id] = res.Owner
		}
		if n := c.led.count(id); n != 1 {
			t.Fatalf("%s: %d activations, want 1", id, n)
		}
	}
	// Placement spread them; the client hosts none.
	per := map[string]int{}
	for _, o := range owners {
		per[o]++
	}
	if len(per) != 3 {
		t.Fatalf("owners %v: want all three Object Servers", per)
	}
	if st, _ := spot.StatsOf(c.client); len(st.Kinds) != 0 {
		t.Fatalf("the Object Client hosts kinds: %+v", st)
	}
	if got := c.active(); got != 60 {
		t.Fatalf("%d active Spots, want 60", got)
	}
}

func callAdd(ctx contextT, n *routemesh.Node, id string, k int64) (int64, spot.Result, error) {
	b, err := addP.EncodeRequest(add{N: k})
	if err != nil {
		return 0, spot.Result{}, err
	}
	out, res, err := spot.CallRaw(ctx, n, "counter", id, addP.Name(), b)
	if err != nil {
		return 0, res, err
	}
	v, err := addP.DecodeReply(out)
	return v, res, err
}

func TestSpot_ConcurrentFirstCallsOneActivation(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	callers := append([]*routemesh.Node{c.client}, c.servers...)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := spot.Call(ctx, callers[i%len(callers)], "counter", "room-1", addP, add{N: 1}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("call: %v", err)
	}
	if n := c.led.count("room-1"); n != 1 {
		t.Fatalf("%d activations for 64 concurrent first calls, want 1", n)
	}
	v, err := spot.Call(ctx, c.client, "counter", "room-1", getP, struct{}{})
	if err != nil || v != 64 {
		t.Fatalf("get: %d, %v; want 64", v, err)
	}
}

func TestSpot_NoObjectServerIsNoTarget(t *testing.T) {
	store := location.NewMemory()
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	_, err := spot.Call(ctxT(t, 5*time.Second), cl, "counter", "x", getP, struct{}{})
	if !errors.Is(err, spot.ErrNoTarget) {
		t.Fatalf("err %v, want ErrNoTarget", err)
	}
}

func TestSpot_RoleNoneNeitherCallsNorHosts(t *testing.T) {
	store := location.NewMemory()
	_, n := startNode(t, store, "none", nodeOpts{role: routemesh.ObjectNone})
	if _, err := spot.Call(ctxT(t, 5*time.Second), n, "counter", "x", getP, struct{}{}); !errors.Is(err, spot.ErrRole) {
		t.Fatalf("call from role None: %v, want ErrRole", err)
	}
}

func TestSpot_KindsOnlyOnObjectServers(t *testing.T) {
	store := location.NewMemory()
	opts := nodeOpts{role: routemesh.ObjectClient, kinds: []spot.Registration{counterKind(nil, 0)}}
	err := startErr(t, store, "oc", opts)
	if !errors.Is(err, spot.ErrConfig) {
		t.Fatalf("kinds on an Object Client: %v, want ErrConfig", err)
	}
}

func TestSpot_HandlerPanicEndsCallAndSpotRestarts(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, c.client, "counter", "p", addP, add{N: 5}); err != nil {
		t.Fatal(err)
	}
	_, err := spot.Call(ctx, c.client, "counter", "p", boomP, struct{}{})
	if !errors.Is(err, spot.ErrHandler) {
		t.Fatalf("panicking handler: %v, want ErrHandler", err)
	}
	// Same identity, fresh state (no persistence), still one Spot.
	v, err := spot.Call(ctx, c.client, "counter", "p", addP, add{N: 1})
	if err != nil || v != 1 {
		t.Fatalf("after the restart: %d, %v; want 1", v, err)
	}
}

func TestSpot_CycleEndsAtOnce(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	start := time.Now()
	// a → a: a turn waiting on itself.
	_, err := spot.Call(ctx, c.client, "counter", "a", callP, callOut{Kind: "counter", Target: "a"})
	if !errors.Is(err, spot.ErrCycle) {
		t.Fatalf("self call: %v, want ErrCycle", err)
	}
	// a → b → a: b's turn calls a, whose turn waits on b.
	_, err = spot.Call(ctx, c.client, "counter", "a", callP, callOut{Kind: "counter", Target: "b", Then: "a"})
	if !errors.Is(err, spot.ErrCycle) {
		t.Fatalf("a → b → a: %v, want ErrCycle", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cycles took %v: they should end at once, not at a deadline", d)
	}
	// A chain without a cycle works: a calls b (get).
	if _, err := spot.Call(ctx, c.client, "counter", "a", callP, callOut{Kind: "counter", Target: "b"}); err != nil {
		t.Fatalf("a → b: %v", err)
	}
}

func TestSpot_IdleDeactivationAndReactivation(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 100*time.Millisecond)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, c.client, "counter", "idle-1", addP, add{N: 2}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "idle deactivation", 5*time.Second, func() bool { return c.led.deactivations("idle-1") == 1 })
	waitFor(t, "no active Spot", 5*time.Second, func() bool { return c.active() == 0 })
	// A call after deactivation reactivates it without an error (state
	// without persistence starts over).
	v, err := spot.Call(ctx, c.client, "counter", "idle-1", addP, add{N: 1})
	if err != nil || v != 1 {
		t.Fatalf("reactivated: %d, %v", v, err)
	}
	if n := c.led.count("idle-1"); n != 2 {
		t.Fatalf("%d activations, want 2", n)
	}
}

func TestSpot_SendIsDelivered(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, c.client, "counter", "s", addP, add{N: 0}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := spot.Send(ctx, c.client, "counter", "s", pingP, add{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "ten sends", 5*time.Second, func() bool {
		v, err := spot.Call(ctx, c.client, "counter", "s", getP, struct{}{})
		return err == nil && v == 10
	})
}

func TestSpot_DrainDeactivatesAndReleases(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 30*time.Second)
	owners := map[string]string{}
	for i := range 30 {
		id := fmt.Sprintf("d-%d", i)
		_, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		owners[id] = res.Owner
	}
	victim := c.servers[0]
	if err := victim.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	st, _ := spot.StatsOf(victim)
	if st.Kinds[0].Active != 0 {
		t.Fatalf("%d Spots still active after drain", st.Kinds[0].Active)
	}
	waitFor(t, "the drain seen by the client", 5*time.Second, func() bool {
		_, draining := c.client.PeerReady(victim.RID())
		return draining
	})
	for id, was := range owners {
		_, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatalf("%s after drain: %v", id, err)
		}
		if res.Owner == victim.RID() {
			t.Fatalf("%s activated on the draining node", id)
		}
		if was != victim.RID() && res.Owner != was {
			t.Fatalf("%s moved from %s to %s though its owner did not drain", id, was, res.Owner)
		}
	}
}
