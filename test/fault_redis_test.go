package test

import (
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_RedisDownUnderLoad: the Location Store goes away for several
// descriptor TTLs while calls run. Existing connections and calls carry
// on (the store is only for discovery), a node started during the outage
// is not found until the store is back, descriptors are republished after
// it, and every call is accounted for.
func TestFault_RedisDownUnderLoad(t *testing.T) {
	srv, store := redisStore(t)
	server := func(b *routemesh.MeshBuilder) { b.Channel("echo").Server().HandleRequest("echo", echo) }
	s1 := autoNode(t, store, "s", server)
	s2 := autoNode(t, store, "s", server)
	c := autoNode(t, store, "c", func(b *routemesh.MeshBuilder) { b.Channel("echo").Client() })
	waitFullMesh(t, s1, s2, c)

	load := startLedger(t, c, 4)
	waitFor(t, "both Servers serving", 5*time.Second, func() bool {
		return load.since(s1.RID()) > 20 && load.since(s2.RID()) > 20
	})
	srv.Stop() // the store is gone (and comes back empty)
	load.mark()
	// Long enough that every lease failed several renewals (its
	// descriptor would have expired), yet calls keep flowing over the
	// existing connections.
	base := map[string]uint64{}
	for _, n := range []*routemesh.Node{s1, s2, c} {
		base[n.RID()] = status(t, n).Counters["descriptor_errors"]
	}
	waitFor(t, "every lease failing its renewals", 15*time.Second, func() bool {
		for _, n := range []*routemesh.Node{s1, s2, c} {
			if status(t, n).Counters["descriptor_errors"] < base[n.RID()]+4 {
				return false
			}
		}
		return true
	})
	if load.since(s1.RID()) == 0 || load.since(s2.RID()) == 0 {
		t.Fatalf("calls stopped during the store outage: served %v", load.Account().ByRID)
	}
	for _, n := range []*routemesh.Node{s1, s2, c} {
		if st := status(t, n); len(st.Peers) != 2 || st.CountPeers(routemesh.PeerReady) != 2 {
			t.Fatalf("%s lost connections while the store was down: %+v", n.RID(), st.Peers)
		}
	}
	// A node that starts now cannot be found yet.
	s3 := autoNode(t, store, "s", server)
	srv.Restart(t)
	waitFor(t, "every descriptor republished", 15*time.Second, func() bool {
		for _, n := range []*routemesh.Node{s1, s2, c, s3} {
			if _, err := descriptorOf(t, store, n.RID()); err != nil {
				return false
			}
		}
		return true
	})
	waitFullMesh(t, s1, s2, s3, c)
	load.mark()
	waitFor(t, "the new Server serving", 10*time.Second, func() bool { return load.since(s3.RID()) > 20 })
	load.check(t)
}
