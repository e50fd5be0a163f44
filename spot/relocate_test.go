package spot_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// Host Relocate: every Spot of the old host moves to the new one, with
// its state.
func TestRelocate_EverySpotMovesToTheNewHost(t *testing.T) {
	store := location.NewMemory()
	_, old := startNode(t, store, "old", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{ledgerKind()}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, old, cl)
	ctx := ctxT(t, 30*time.Second)
	for i := range 30 {
		if _, err := spot.Call(ctx, cl, "ledger", fmt.Sprintf("h-%d", i), stepP, step{Caller: "c", Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, repl := startNode(t, store, "new", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{ledgerKind()}})
	waitSpots(t, old, repl, cl)
	res, err := spot.Relocate(ctx, old, repl.RID())
	if err != nil || res.Moved != 30 || res.Failed != 0 {
		t.Fatalf("relocate: %+v, %v; want 30 moved", res, err)
	}
	for i := range 30 {
		out, r, err := spot.CallRaw(ctx, cl, "ledger", fmt.Sprintf("h-%d", i), stepP.Name(), mustEnc(t, stepP, step{Caller: "c", Seq: 2}))
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := stepP.DecodeReply(out); n != 2 || r.Owner != repl.RID() {
			t.Fatalf("h-%d after relocate: total %d on %s", i, n, r.Owner)
		}
	}
}

// A node with a manual connection is refused before anything changes.
func TestRelocate_ManualTopologyBlocked(t *testing.T) {
	store := location.NewMemory()
	opts := zlink.NewOptions().SetLocationStore(store).SetLogger(logger(t))
	b := opts.AddRouteMesh(mesh).SetRoutingID("manual-1").SetObjectRole(routemesh.ObjectServer)
	spot.EnableWith(b, fastSpots, ledgerKind())
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(sctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, h) })
	n := h.Mesh(mesh)
	if err := spot.WaitReady(ctxT(t, 10*time.Second), n); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctxT(t, 5*time.Second), n, "ledger", "m", stepP, step{Caller: "c", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = spot.Relocate(ctxT(t, 5*time.Second), n, "anyone")
	if !errors.Is(err, spot.ErrManualTopology) {
		t.Fatalf("relocate on a manual node: %v, want ErrManualTopology", err)
	}
	if st, _ := spot.StatsOf(n); st.Kinds[0].Active != 1 || st.Moves != 0 {
		t.Fatalf("a refused relocate changed something: %+v", st)
	}
}

// Rebalancing (opt-in): after a heavier Object Server joins, Spots move
// toward it at a bounded rate; callers see no error.
func TestRebalance_MovesTowardPlacementAtABoundedRate(t *testing.T) {
	store := location.NewMemory()
	cfg := fastSpots
	cfg.Rebalance = 50
	_, s0 := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, cfg: &cfg, kinds: []spot.Registration{ledgerKind()}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, s0, cl)
	ctx := ctxT(t, 30*time.Second)
	const n = 60
	for i := range n {
		if _, err := spot.Call(ctx, cl, "ledger", fmt.Sprintf("rb-%d", i), stepP, step{Caller: "c", Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, s1 := startNode(t, store, "os1", nodeOpts{role: routemesh.ObjectServer, cfg: &cfg, weight: 10000, kinds: []spot.Registration{ledgerKind()}})
	waitSpots(t, s0, s1, cl)
	waitFor(t, "Spots move toward the heavier server", 15*time.Second, func() bool {
		st, _ := spot.StatsOf(s0)
		return st.Rebalanced >= n/2
	})
	for i := range n {
		out, _, err := spot.CallRaw(ctx, cl, "ledger", fmt.Sprintf("rb-%d", i), stepP.Name(), mustEnc(t, stepP, step{Caller: "c", Seq: 2}))
		if err != nil {
			t.Fatalf("rb-%d after rebalancing: %v", i, err)
		}
		if v, _ := stepP.DecodeReply(out); v != 2 {
			t.Fatalf("rb-%d: total %d, want 2 (state moved with it)", i, v)
		}
	}
}
