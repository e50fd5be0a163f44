package test

// Contract item 4: RIDs and ChannelName memberships of different MeshNames
// never mix. The same ChannelName is served in two meshes (by nodes of
// separate hosts, since one process may register a name on one RouteMesh
// only); calls started in one mesh only ever reach that mesh's Servers.

import (
	"errors"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// meshServer is one Server of channel "match" in one mesh; its reply names
// its mesh and RID.
type meshServer struct {
	mesh    string
	node    *routemesh.Node
	handled atomic.Int64
}

func (s *meshServer) handle(c *routemesh.Context, _ []byte) ([]byte, error) {
	s.handled.Add(1)
	return []byte(s.mesh + "/" + c.Packet), nil
}

func TestContract_Isolation_ChannelMembershipStaysInItsMesh(t *testing.T) {
	t.Run("manual, same RIDs in both meshes", func(t *testing.T) {
		// Each mesh has Servers "s1" and "s2" on "match". The callers name
		// their own mesh's endpoints — and the other mesh's s1 by mistake.
		servers := map[string][]*meshServer{}
		for _, mesh := range []string{"A", "B"} {
			for _, rid := range []string{"s1", "s2"} {
				s := &meshServer{mesh: mesh}
				o := zlink.NewOptions()
				o.AddRouteMesh(mesh).SetRoutingID(rid).ConfigureLiveness(fastLiveness).
					Channel("match").Server().HandleRequest("who", s.handle)
				s.node = startHost(t, o).Mesh(mesh)
				servers[mesh] = append(servers[mesh], s)
			}
		}
		callers := map[string]*routemesh.Node{}
		for mesh, other := range map[string]string{"A": "B", "B": "A"} {
			o := zlink.NewOptions()
			b := o.AddRouteMesh(mesh).SetRoutingID("caller").ConfigureLiveness(fastLiveness).Channel("match").Client()
			for _, s := range servers[mesh] {
				b.AddPeer(s.node.Endpoint(), s.node.RID())
			}
			b.AddPeer(servers[other][0].node.Endpoint(), "s1")
			callers[mesh] = startHost(t, o).Mesh(mesh)
		}
		for mesh, c := range callers {
			waitPeerState(t, c, "s1", routemesh.PeerReady)
			waitPeerState(t, c, "s2", routemesh.PeerReady)
			// The mistaken endpoint is refused by the handshake: it never
			// becomes a second "s1" of this mesh.
			waitFor(t, mesh+" caller refused by the other mesh's s1", 10*time.Second, func() bool {
				return status(t, c).CountPeers(routemesh.PeerNotConnected) == 1
			})
		}
		checkIsolation(t, callers, servers)
	})

	t.Run("automatic, one Location Store for both meshes", func(t *testing.T) {
		// Both meshes' descriptors live in one store; discovery reads only
		// its own MeshName's descriptors.
		store := memStore(t)
		servers := map[string][]*meshServer{}
		callers := map[string]*routemesh.Node{}
		for _, mesh := range []string{"A", "B"} {
			for range 2 {
				s := &meshServer{mesh: mesh}
				o := zlink.NewOptions().SetLocationStore(store)
				o.AddRouteMesh(mesh).SetRoutingIDPrefix("s").ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
					Channel("match").Server().HandleRequest("who", s.handle)
				s.node = startHost(t, o).Mesh(mesh)
				servers[mesh] = append(servers[mesh], s)
			}
			o := zlink.NewOptions().SetLocationStore(store)
			o.AddRouteMesh(mesh).SetRoutingIDPrefix("caller").ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
				Channel("match").Client()
			callers[mesh] = startHost(t, o).Mesh(mesh)
		}
		for mesh, c := range callers {
			waitFullMesh(t, c, servers[mesh][0].node, servers[mesh][1].node)
			// A few more discovery rounds: the other mesh's descriptors, all
			// in the same store, never become peers.
			waitRounds(t, c, 3)
			var peers []string
			for _, p := range status(t, c).Peers {
				peers = append(peers, p.RID)
			}
			sort.Strings(peers)
			want := []string{servers[mesh][0].node.RID(), servers[mesh][1].node.RID()}
			sort.Strings(want)
			if !slices.Equal(peers, want) {
				t.Fatalf("mesh %s caller's peers %v, want only its own mesh's %v", mesh, peers, want)
			}
			ds, err := store.ListDescriptors(ctxT(t, 2*time.Second), mesh)
			if err != nil || len(ds) != 3 {
				t.Fatalf("mesh %s descriptors: %d (%v)", mesh, len(ds), err)
			}
		}
		checkIsolation(t, callers, servers)
	})
}

// checkIsolation drives select-one, multicast and Node direct from each
// mesh's caller and checks that only that mesh's Servers ever answer.
func checkIsolation(t *testing.T, callers map[string]*routemesh.Node, servers map[string][]*meshServer) {
	t.Helper()
	for mesh, c := range callers {
		other := "B"
		if mesh == "B" {
			other = "A"
		}
		own := map[string]bool{}
		for _, s := range servers[mesh] {
			own[s.node.RID()] = true
		}
		before := map[*meshServer]int64{}
		for _, s := range servers[other] {
			before[s] = s.handled.Load()
		}
		const calls = 64
		served := map[string]int{}
		for i := 0; i < calls; i++ {
			out, rid, err := c.CallFrom(ctxT(t, 5*time.Second), "match", "who", nil)
			if err != nil {
				t.Fatalf("mesh %s call %d: %v", mesh, i, err)
			}
			if !own[rid] || string(out) != mesh+"/who" {
				t.Fatalf("mesh %s call served by %q with %q: another mesh's Server", mesh, rid, out)
			}
			served[rid]++
		}
		if len(served) != len(own) {
			t.Fatalf("mesh %s: calls reached %v, want every one of its own Servers %v", mesh, served, own)
		}
		sel := recordedSelection(t, c, "match")
		for _, cand := range sel.Candidates {
			if !own[cand.RID] {
				t.Fatalf("mesh %s selection lists %q, not a member of this mesh: %+v", mesh, cand.RID, sel)
			}
		}
		res, err := c.Multicast(ctxT(t, 5*time.Second), "match", "who", nil)
		if err != nil || len(res) != len(own) {
			t.Fatalf("mesh %s multicast: %+v %v, want one result per own Server", mesh, res, err)
		}
		for _, r := range res {
			if r.Err != nil || !own[r.RID] || string(r.Reply) != mesh+"/who" {
				t.Fatalf("mesh %s multicast result %+v", mesh, r)
			}
		}
		for _, s := range servers[other] {
			if s.handled.Load() != before[s] {
				t.Fatalf("a call started in mesh %s reached mesh %s's %s", mesh, other, s.node.RID())
			}
			if own[s.node.RID()] {
				continue // same RID in both meshes: it names this mesh's node
			}
			if _, err := c.CallNode(ctxT(t, time.Second), s.node.RID(), "who", nil); !errors.Is(err, zlink.ErrNoTarget) {
				t.Fatalf("mesh %s Node direct to mesh %s's %s: %v, want ErrNoTarget", mesh, other, s.node.RID(), err)
			}
		}
	}
}
