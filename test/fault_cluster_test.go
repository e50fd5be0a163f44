package test

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_ClusterMasterKilledUnderLoad: automatic topology on a real
// 3-master Redis Cluster. The master holding the mesh's descriptors has a
// replica; it is killed (SIGKILL) under load and its replica takes over.
// The nodes keep calling over their connections throughout, their
// descriptors are written to the promoted replica, a Server started after
// the promotion is discovered and served from, every call is accounted
// for and the goroutines come back to their baseline.
func TestFault_ClusterMasterKilledUnderLoad(t *testing.T) {
	// Registered first, so it runs after the stores closed: rueidis ends a
	// delayed cluster refresh, begun on the killed master's errors, by
	// itself about a second later.
	t.Cleanup(func() { waitNoGoroutine(t, "rueidis.(*call).DelayDo", 10*time.Second) })
	c := locationtest.StartRedisCluster(t)
	masters := c.Nodes()
	m := masters[clusterSlotMap(t, masters).master(t, keySlot(t, masters[0], "{mesh:"+autoMesh+"}"))]
	replica := c.AddReplica(t, m)
	mID, rID := m.Command(t, "CLUSTER", "MYID"), replica.Command(t, "CLUSTER", "MYID")
	waitFor(t, "every master to know the replica as M's", 15*time.Second, func() bool {
		for _, x := range masters {
			if !knowsReplicaOf(t, x, rID, mID) {
				return false
			}
		}
		return true
	})
	prefix := newClusterKeyPrefix()
	node := func(rid string, setup func(*routemesh.MeshBuilder)) (*zlink.Host, *routemesh.Node, location.Store) {
		store := clusterStore(t, c, prefix)
		o := zlink.NewOptions().SetLocationStore(store)
		b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(rid).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery)
		setup(b)
		h := startHost(t, o)
		return h, h.Mesh(autoMesh), store
	}
	server := func(b *routemesh.MeshBuilder) { b.Channel("echo").Server().HandleRequest("echo", echo) }
	_, s1, _ := node("s", server)
	_, s2, _ := node("s", server)
	_, cl, _ := node("c", func(b *routemesh.MeshBuilder) { b.Channel("echo").Client() })
	waitFullMesh(t, s1, s2, cl)
	fresh := clusterStore(t, c, prefix) // the test's own view of the store
	base := runtime.NumGoroutine()

	load := startLedger(t, cl, 4)
	waitFor(t, "both Servers serving", 15*time.Second, func() bool { return load.since(s1.RID()) > 20 && load.since(s2.RID()) > 20 })
	killed := time.Now()
	c.KillMaster(t, m, replica)
	promoted := time.Since(killed)
	load.mark()
	waitFor(t, "calls served by both Servers after the promotion", 10*time.Second, func() bool {
		return load.since(s1.RID()) > 50 && load.since(s2.RID()) > 50
	})
	// Past two descriptor TTLs after the promotion, every descriptor is
	// still there: renewed on the promoted replica.
	promotedAt := time.Now()
	waitFor(t, "every descriptor renewed on the promoted replica", 10*time.Second, func() bool {
		if time.Since(promotedAt) < 2*fastDiscovery.DescriptorTTL {
			return false
		}
		for _, n := range []*routemesh.Node{s1, s2, cl} {
			if _, err := descriptorOf(t, fresh, n.RID()); err != nil {
				return false
			}
		}
		return true
	})
	started := time.Now()
	h3, s3, store3 := node("s", server)
	waitFor(t, "the Server started after the promotion serving", 15*time.Second, func() bool { return load.since(s3.RID()) > 20 })
	found := time.Since(started)
	load.check(t)
	for _, n := range []*routemesh.Node{s1, s2, cl} {
		if st := status(t, n); st.State != routemesh.NodeReady {
			t.Fatalf("%s: state %v after the failover", n.RID(), st.State)
		}
	}
	stopHost(t, h3)
	_ = store3.Close()
	waitFor(t, "the third Server gone from the client", 10*time.Second, func() bool { return !clientKnows(t, cl, s3.RID()) })
	g := goroutinesBack(t, base)
	t.Logf("master %s killed, replica %s promoted in %v; a Server started after it served in %v; goroutines %d (baseline %d)",
		m.Addr(), replica.Addr(), promoted.Round(time.Millisecond), found.Round(time.Millisecond), g, base)
}

// waitNoGoroutine waits (with a deadline) until no goroutine's stack
// mentions fn.
func waitNoGoroutine(t *testing.T, fn string, d time.Duration) {
	t.Helper()
	buf := make([]byte, 4<<20)
	waitFor(t, "no goroutine in "+fn, d, func() bool {
		return !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn))
	})
}
