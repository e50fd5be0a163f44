package spot_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// ownerStores are the stores spot.Owner is tested on: memory and a real
// redis-server.
func ownerStores(t *testing.T) map[string]func(t *testing.T) location.Store {
	return map[string]func(t *testing.T) location.Store{
		"memory": func(*testing.T) location.Store { return location.NewMemory() },
		"redis": func(t *testing.T) location.Store {
			srv := locationtest.StartRedis(t)
			s, err := location.NewRedis(ctxT(t, 10*time.Second), location.RedisConfig{Addr: srv.Addr()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() }) // registered first: runs after the nodes stopped
			return s
		},
	}
}

// Owner reads the record and claims nothing: a Spot never called has no
// owner (and still none after the look-up); a called one names its owner,
// active there (as the owner itself sees) or unknown (as another node
// sees, the owner's lease being live); an owner whose lease is gone has
// no active Spot; a Spot released by its owner's clean stop has no owner
// but keeps its epoch.
func TestOwner_ReadsTheRecordAndNeverClaims(t *testing.T) {
	for name, newStore := range ownerStores(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			led := newLedger()
			h0, s0 := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{counterKind(led, 0)}})
			_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
			waitSpots(t, s0, cl)
			ctx := ctxT(t, 20*time.Second)

			// Never called: nobody owns it, and asking claims nothing.
			for _, n := range []*routemesh.Node{s0, cl} {
				info, err := spot.Owner(ctx, n, "counter", "nobody")
				if !errors.Is(err, spot.ErrNotFound) || info.RID != "" || info.Epoch != 0 || info.Active != spot.ActiveNo {
					t.Fatalf("Owner of a Spot never called, from %s = %+v %v; want ErrNotFound", n.RID(), info, err)
				}
			}
			if rec, err := store.SpotRecord(ctx, mesh, "counter", "nobody"); err != nil || rec.Owned() || rec.Epoch != 0 {
				t.Fatalf("the look-up wrote a record: %+v %v", rec, err)
			}
			if led.count("nobody") != 0 {
				t.Fatal("the look-up activated the Spot")
			}

			if _, err := spot.Call(ctx, cl, "counter", "p1", addP, add{N: 2}); err != nil {
				t.Fatal(err)
			}
			st, _ := spot.StatsOf(s0)
			// The first reply can leave before the kind actor lists the new
			// activation (it queues the calls that waited first): the owner
			// sees it active a moment later.
			var local spot.OwnerInfo
			var err error
			waitFor(t, "the owner to list p1 as active", 10*time.Second, func() bool {
				local, err = spot.Owner(ctx, s0, "counter", "p1")
				return err == nil && local.Active == spot.ActiveYes
			})
			if err != nil || local.RID != s0.RID() || local.Generation != st.LeaseGeneration || local.Epoch == 0 ||
				!local.Local || !local.LeaseLive || local.Active != spot.ActiveYes || local.Mesh != mesh || local.Kind != "counter" || local.ID != "p1" {
				t.Fatalf("Owner on the owner = %+v %v", local, err)
			}
			remote, err := spot.Owner(ctx, cl, "counter", "p1")
			if err != nil || remote.RID != s0.RID() || remote.Generation != local.Generation || remote.Epoch != local.Epoch ||
				remote.Local || !remote.LeaseLive || remote.Active != spot.ActiveUnknown {
				t.Fatalf("Owner on another node = %+v %v", remote, err)
			}
			if led.count("p1") != 1 {
				t.Fatalf("activations of p1: %d, want 1 (the look-ups activate nothing)", led.count("p1"))
			}

			// The owner's lease gone: whatever the record says, the Spot is
			// not active there.
			if err := store.DeleteSpotLease(ctx, location.SpotLease{Mesh: mesh, RID: s0.RID(), Generation: local.Generation}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the record to name a lease that is gone", 10*time.Second, func() bool {
				info, err := spot.Owner(ctx, cl, "counter", "p1")
				return err == nil && info.Generation == local.Generation && !info.LeaseLive && info.Active == spot.ActiveNo
			})

			// A clean stop releases the records: nobody owns p1, its epoch
			// stays.
			if _, err := spot.Call(ctx, cl, "counter", "p2", addP, add{N: 1}); err != nil {
				t.Fatal(err)
			}
			before, err := spot.Owner(ctx, cl, "counter", "p2")
			if err != nil {
				t.Fatal(err)
			}
			stop(t, h0)
			info, err := spot.Owner(ctx, cl, "counter", "p2")
			if !errors.Is(err, spot.ErrNotFound) || info.RID != "" || info.Epoch != before.Epoch {
				t.Fatalf("Owner after the owner's clean stop = %+v %v; want ErrNotFound with epoch %d", info, err, before.Epoch)
			}
		})
	}
}

// Bad names and a node without a store are refused with typed errors.
func TestOwner_Refusals(t *testing.T) {
	_, cl := startNode(t, location.NewMemory(), "oc", nodeOpts{role: routemesh.ObjectClient})
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct{ kind, id string }{{"", "x"}, {"counter", ""}, {"a:b", "x"}} {
		if _, err := spot.Owner(ctx, cl, tc.kind, tc.id); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("Owner(%q, %q) = %v, want location.ErrInvalid", tc.kind, tc.id, err)
		}
	}
	if _, err := spot.Owner(ctx, nil, "counter", "x"); !errors.Is(err, spot.ErrNotEnabled) {
		t.Errorf("Owner on a nil node = %v, want ErrNotEnabled", err)
	}
}
