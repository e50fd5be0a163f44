package spot_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// Placement picks where to claim; the record decides who owns: a Spot
// stays with its live owner when a new Object Server joins, even where
// placement would now pick the newcomer.
func TestSpot_LiveOwnerKeepsItsSpots(t *testing.T) {
	store := location.NewMemory()
	c := newCluster(t, store, 0)
	ctx := ctxT(t, 30*time.Second)
	owners := map[string]string{}
	for i := range 200 {
		id := fmt.Sprintf("k-%d", i)
		_, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		owners[id] = res.Owner
	}
	_, newcomer := startNode(t, store, "os-new", nodeOpts{role: routemesh.ObjectServer, weight: 10000,
		kinds: []spot.Registration{counterKind(c.led, 0)}})
	waitSpots(t, append(c.servers, newcomer, c.client)...)
	waitFor(t, "the client places on the newcomer", 5*time.Second, func() bool {
		_, res, err := callAdd(ctx, c.client, fmt.Sprintf("fresh-%d", time.Now().UnixNano()), 1)
		return err == nil && res.Owner == newcomer.RID()
	})
	for id, was := range owners {
		v, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner != was || v != 2 {
			t.Fatalf("%s: owner %s value %d, want %s and 2 (a live owner keeps its Spot)", id, res.Owner, v, was)
		}
	}
}

// A caller that reaches the mesh through one Object Server: that node
// routes the call.
func TestSpot_CallViaRoutes(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	b, _ := addP.EncodeRequest(add{N: 3})
	for i := range 20 {
		id := fmt.Sprintf("via-%d", i)
		out, res, err := spot.CallViaRaw(ctx, c.client, c.servers[0].RID(), "counter", id, addP.Name(), b)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := addP.DecodeReply(out); v != 3 {
			t.Fatalf("%s: %d", id, v)
		}
		_, direct, err := callAdd(ctx, c.client, id, 0)
		if err != nil || direct.Owner != res.Owner || direct.Epoch != res.Epoch {
			t.Fatalf("%s: routed answer from %s@%d, direct from %s@%d (%v)", id, res.Owner, res.Epoch, direct.Owner, direct.Epoch, err)
		}
	}
	// An Object Client does not route.
	_, _, err := spot.CallViaRaw(ctx, c.servers[0], c.client.RID(), "counter", "x", addP.Name(), b)
	if !errors.Is(err, spot.ErrNoTarget) {
		t.Fatalf("via an Object Client: %v, want ErrNoTarget", err)
	}
}

// R1: a refused lease renewal fences every Spot of that generation; the
// node starts a new generation and its Spots come back with a higher
// epoch.
func TestSpot_RefusedLeaseFencesAndStartsNewGeneration(t *testing.T) {
	store := location.NewMemory()
	c := newCluster(t, store, 0)
	ctx := ctxT(t, 30*time.Second)
	victim := c.servers[1]
	var ids []string
	epochs := map[string]uint64{}
	for i := 0; len(ids) < 5 && i < 500; i++ {
		id := fmt.Sprintf("f-%d", i)
		_, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner == victim.RID() {
			ids = append(ids, id)
			epochs[id] = res.Epoch
		}
	}
	before, _ := spot.StatsOf(victim)
	if err := store.DeleteSpotLease(ctx, location.SpotLease{Mesh: mesh, RID: victim.RID(), Generation: before.LeaseGeneration}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "fencing and a new lease generation", 5*time.Second, func() bool {
		st, _ := spot.StatsOf(victim)
		return st.Fenced >= uint64(len(ids)) && st.LeaseGeneration != before.LeaseGeneration && st.LeaseValid
	})
	for _, id := range ids {
		_, res, err := callAdd(ctx, c.client, id, 1)
		if err != nil {
			t.Fatalf("%s after fencing: %v", id, err)
		}
		if res.Epoch <= epochs[id] {
			t.Fatalf("%s: epoch %d after fencing, was %d", id, res.Epoch, epochs[id])
		}
	}
}

// Stop fences, releases every record (the epoch is kept), then deletes the
// lease: the next call activates elsewhere at once with a higher epoch.
func TestSpot_StopReleasesRecords(t *testing.T) {
	store := location.NewMemory()
	led := newLedger()
	h0, s0 := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{counterKind(led, 0)}})
	_, s1 := startNode(t, store, "os1", nodeOpts{role: routemesh.ObjectServer, weight: 1, kinds: []spot.Registration{counterKind(led, 0)}})
	waitSpots(t, s0, s1)
	ctx := ctxT(t, 20*time.Second)
	// s1 learns of s0 at its next listing; until then it places on itself.
	var id string
	var res spot.Result
	waitFor(t, "a Spot placed on os0", 5*time.Second, func() bool {
		id = fmt.Sprintf("st-%d", time.Now().UnixNano())
		var err error
		_, res, err = callAdd(ctx, s1, id, 1)
		return err == nil && res.Owner == s0.RID()
	})
	stop(t, h0)
	rec, err := store.SpotRecord(ctx, mesh, "counter", id)
	if err != nil || rec.OwnerRID != "" || rec.Epoch != res.Epoch {
		t.Fatalf("record after stop: %+v %v; want no owner, epoch %d", rec, err, res.Epoch)
	}
	waitFor(t, "the stopped node gone from placement", 5*time.Second, func() bool {
		ready, _ := s1.PeerReady(s0.RID())
		return !ready
	})
	start := time.Now()
	_, res2, err := callAdd(ctx, s1, id, 1)
	if err != nil || res2.Owner != s1.RID() || res2.Epoch <= res.Epoch {
		t.Fatalf("after stop: %+v %v", res2, err)
	}
	if d := time.Since(start); d > fastSpots.LeaseTTL {
		t.Fatalf("the call after a clean stop took %v: it waited for a lease", d)
	}
}

// Start refuses a lease shorter than 3 renewals + the margin.
func TestSpot_ConfigRefusesShortLease(t *testing.T) {
	bad := spot.Config{LeaseTTL: time.Second, RenewEvery: 400 * time.Millisecond, Margin: 200 * time.Millisecond}
	err := startErrWith(t, location.NewMemory(), "os", nodeOpts{role: routemesh.ObjectServer, cfg: &bad})
	if !errors.Is(err, spot.ErrConfig) {
		t.Fatalf("TTL 1s, renew 400ms, margin 200ms: %v, want ErrConfig", err)
	}
}

// Sends from one caller to one Spot run in order while the owner is
// stable, the first ones included (they wait for the activation).
func TestSpot_SendsInOrderFromOneCaller(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	for i := 1; i <= 500; i++ {
		if err := spot.Send(ctx, c.client, "counter", "order", seqP, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	var got [2]int64
	waitFor(t, "all sends", 10*time.Second, func() bool {
		var err error
		got, err = spot.Call(ctx, c.client, "counter", "order", orderP, struct{}{})
		return err == nil && got[0] == 500
	})
	if got[1] != 0 {
		t.Fatalf("%d of 500 sends ran out of order", got[1])
	}
}

// A reentrant kind takes a call of a chain its own turn waits on (a → b →
// a) instead of ending it with ErrCycle; the default kind refuses it.
func TestSpot_ReentrantKindTakesItsOwnChain(t *testing.T) {
	store := location.NewMemory()
	led := newLedger()
	re := counterKind(led, 0)
	re.SetReentrant()
	var servers []*routemesh.Node
	for i := range 2 {
		_, n := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{re}})
		servers = append(servers, n)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, cl, "counter", "a", addP, add{N: 7}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// a → b → a.get: a's turn is waiting on b, b calls a: reentrant.
	v, err := spot.Call(ctx, cl, "counter", "a", callP, callOut{Kind: "counter", Target: "b", Then: "a"})
	if err != nil || v != 7 {
		t.Fatalf("a → b → a on a reentrant kind: %d, %v; want 7", v, err)
	}
	// a → a works too.
	if v, err := spot.Call(ctx, cl, "counter", "a", callP, callOut{Kind: "counter", Target: "a"}); err != nil || v != 7 {
		t.Fatalf("a → a: %d, %v", v, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reentrant calls took %v", d)
	}
}

// An empty restart of the store (every record and lease gone, a new
// incarnation): the Spots claimed in the old incarnation are fenced, it is
// counted, and calls go on — served by one activation each again.
func TestSpot_StoreEmptyRestartFencesAndCounts(t *testing.T) {
	store := location.NewMemory()
	c := newCluster(t, store, 0)
	ctx := ctxT(t, 30*time.Second)
	for i := range 30 {
		if _, _, err := callAdd(ctx, c.client, fmt.Sprintf("r-%d", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	store.RestartEmpty()
	waitFor(t, "every server sees the new incarnation or its lease refused, and its Spots fenced", 10*time.Second, func() bool {
		var fenced uint64
		for _, s := range c.servers {
			st, _ := spot.StatsOf(s)
			fenced += st.Fenced
		}
		return fenced >= 30 && c.active() == 0
	})
	var seen uint64
	for _, s := range c.servers {
		st, _ := spot.StatsOf(s)
		seen += st.StoreIncarnations
	}
	if seen == 0 {
		t.Log("the lease refusal fenced everything before a probe saw the new incarnation")
	}
	for i := range 30 {
		id := fmt.Sprintf("r-%d", i)
		v, _, err := callAdd(ctx, c.client, id, 1)
		if err != nil || v != 1 {
			t.Fatalf("%s after the restart: %d, %v", id, v, err)
		}
	}
}

// A turn starts asynchronous Spot calls and ends; each reply comes back
// as a message of the Spot, in a turn of its own, with its tag — a
// timeout included.
func TestSpot_AsyncCallsReplyAsMessages(t *testing.T) {
	c := newCluster(t, location.NewMemory(), 0)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, c.client, "counter", "b", addP, add{N: 42}); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, c.client, "counter", "a", asyncP, asyncOut{Kind: "counter", Target: "b", Packet: "get", TimeoutMs: 2000}); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, c.client, "counter", "a", asyncP, asyncOut{Kind: "counter", Target: "slow", Packet: "sleep", TimeoutMs: 100}); err != nil {
		t.Fatal(err)
	}
	var got []string
	waitFor(t, "two replies", 10*time.Second, func() bool {
		var err error
		got, err = spot.Call(ctx, c.client, "counter", "a", repliesP, struct{}{})
		return err == nil && len(got) == 2
	})
	// In either order: b's reply usually comes first, but a loaded machine
	// can take longer than slow's 100 ms timeout to deliver it.
	reply, timeout := got[0], got[1]
	if strings.HasPrefix(reply, "slow!") {
		reply, timeout = timeout, reply
	}
	if reply != "b=42" || !strings.HasPrefix(timeout, "slow!") || !strings.Contains(timeout, "timeout") {
		t.Fatalf("replies %q: want b=42 and a timeout of slow", got)
	}
}
