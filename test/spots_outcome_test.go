package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// TestSpots_UnknownSaveIsOutcomeUnknown: a ReplyAfterWrite Spot whose save
// is held on the way to Redis past the store timeout answers
// ErrOutcomeUnknown — never ErrBusy, whose row says the handler did not
// run. The held write lands when the link heals; the activation re-reads
// its state before its next turn, so it answers from what the store holds
// and counts on from there.
func TestSpots_UnknownSaveIsOutcomeUnknown(t *testing.T) {
	srv, s := redisStore(t)
	states, ok := s.(location.SpotStates)
	if !ok {
		t.Fatalf("the store %T keeps no Spot states", s)
	}
	px, err := fault.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)

	cfg := spot.Config{LeaseTTL: 10 * time.Second, RenewEvery: time.Second, Margin: time.Second, StoreTimeout: 300 * time.Millisecond}
	disc := routemesh.DiscoveryConfig{DescriptorTTL: 10 * time.Second, Poll: 100 * time.Millisecond, InboundGrace: time.Second}
	node := func(addr, prefix string, role routemesh.ObjectRole, kinds ...spot.Registration) *routemesh.Node {
		o := zlink.NewOptions().SetLocationStore(openRedis(t, addr))
		b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(spotsLiveness).
			ConfigureDiscovery(disc).SetObjectRole(role)
		spot.EnableWith(b, cfg, kinds...)
		return startHost(t, o).Mesh(autoMesh)
	}
	kind := spotsKind(nil).Persist(spot.Persistence{Version: 1, ReplyAfterWrite: true})
	server := node(px.Addr(), "os", routemesh.ObjectServer, kind) // its store link goes through the proxy
	client := node(srv.Addr(), "oc", routemesh.ObjectClient)
	spotsReady(t, server, client)

	ctx := ctxT(t, 30*time.Second)
	if v, _, err := spotsAddCall(ctx, client, "w", 1); err != nil || v != 1 {
		t.Fatalf("first add: %d, %v", v, err)
	}
	px.Partition() // the next save is held past the store timeout
	_, _, err = spotsAddCall(ctx, client, "w", 1)
	px.Heal()
	if !errors.Is(err, zlink.ErrOutcomeUnknown) || errors.Is(err, zlink.ErrBusy) || errors.Is(err, zlink.ErrFenced) {
		t.Fatalf("an add whose save was held: %v; want ErrOutcomeUnknown only", err)
	}

	stored := func() int64 {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := states.GetSpotState(sctx, autoMesh, spotsKindName, "w")
		if err != nil {
			t.Fatalf("reading the state: %v", err)
		}
		var c spotsCounter
		if err := msgpack.Unmarshal(st.Data, &c); err != nil {
			t.Fatal(err)
		}
		return c.N
	}
	// The Spot answers from what the store holds (the held write may or
	// may not have landed: 1 or 2), and goes on from it.
	var v int64
	waitFor(t, "the Spot to answer again", 15*time.Second, func() bool {
		v, _, err = spotsAddCall(ctx, client, "w", 0)
		return err == nil
	})
	if got := stored(); v != got || (v != 1 && v != 2) {
		t.Fatalf("after the unknown save the Spot says %d, the store holds %d; want the same, 1 or 2", v, got)
	}
	if st := spotsStats(t, server); st.StateRereads < 1 {
		t.Fatalf("state re-reads %d; want at least 1", st.StateRereads)
	}
	if next, _, err := spotsAddCall(ctx, client, "w", 1); err != nil || next != v+1 || stored() != v+1 {
		t.Fatalf("the next add: %d, %v (store %d); want %d", next, err, stored(), v+1)
	}
}
