package test

import (
	"slices"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// TestMeshView_FollowsTheMesh: every node's view of the mesh (kept by its
// discovery from the store's revision and pushes, never by listing the
// mesh on a timer) shows a node that joins, a weight change, a descriptor
// whose lease lapses (found by the watches' sweeps) and a node that stops;
// a refresh is answered by a read that started after it. On Redis and on
// the in-memory store.
func TestMeshView_FollowsTheMesh(t *testing.T) {
	for _, kind := range []string{"redis", "memory"} {
		t.Run(kind, func(t *testing.T) {
			var store location.Store
			if kind == "redis" {
				_, store = redisStore(t)
			} else {
				store = location.NewMemory(location.WithPollInterval(100 * time.Millisecond))
				t.Cleanup(func() { _ = store.Close() })
			}
			start := func(prefix string, server bool) (*zlink.Host, *routemesh.Node) {
				o := zlink.NewOptions().SetLocationStore(store)
				b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery)
				if server {
					b.Channel("match").Server().SetWeight(100).HandleRequest("who", echo)
				} else {
					b.Channel("match").Client()
				}
				h := startHost(t, o)
				return h, h.Mesh(autoMesh)
			}
			_, a := start("a", true)
			_, b := start("b", false)
			hc, c := start("c", false)
			nodes := []*routemesh.Node{a, b, c}
			viewsShow(t, nodes, "every node", a.RID(), b.RID(), c.RID())

			// A weight change reaches every view.
			if err := a.SetWeight(ctxT(t, 5*time.Second), "match", 7); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the new weight in every view", 10*time.Second, func() bool {
				for _, n := range nodes {
					d, ok := viewOf(n, a.RID())
					if !ok || d.Servers["match"] != 7 {
						return false
					}
				}
				return true
			})

			// A refresh is a read that started after the ask.
			before := b.MeshView().Rounds
			ticket := b.RefreshMeshView()
			v, err := b.WaitMeshView(ctxT(t, 5*time.Second), ticket)
			if err != nil || v.Rounds <= before {
				t.Fatalf("refresh: rounds %d → %d, %v", before, v.Rounds, err)
			}

			// A lease that lapses leaves every view.
			ghost := location.Descriptor{Mesh: autoMesh, RID: "zz-ghost", Generation: 1, Revision: 1,
				Endpoint: "tcp://127.0.0.1:1", ObjectRole: location.RoleClient, Protocol: 1}
			if err := store.PutDescriptor(ctxT(t, 2*time.Second), ghost, 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			viewsShow(t, nodes, "the ghost", a.RID(), b.RID(), c.RID(), ghost.RID)
			viewsShow(t, nodes, "the ghost gone", a.RID(), b.RID(), c.RID())

			// A node that stops leaves every view.
			stopHost(t, hc)
			viewsShow(t, nodes[:2], "c gone", a.RID(), b.RID())
		})
	}
}

// viewOf returns rid's descriptor in n's view of the mesh.
func viewOf(n *routemesh.Node, rid string) (location.Descriptor, bool) {
	for _, d := range n.MeshView().Descriptors {
		if d.RID == rid {
			return d, true
		}
	}
	return location.Descriptor{}, false
}

// viewsShow waits until every node's view holds exactly rids.
func viewsShow(t *testing.T, nodes []*routemesh.Node, what string, rids ...string) {
	t.Helper()
	slices.Sort(rids)
	waitFor(t, "views: "+what, 15*time.Second, func() bool {
		for _, n := range nodes {
			var have []string
			for _, d := range n.MeshView().Descriptors {
				have = append(have, d.RID)
			}
			if !slices.Equal(have, rids) {
				return false
			}
		}
		return true
	})
}
