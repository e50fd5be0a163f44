package test

// Contract tests of automatic topology (the "peer connections" contract
// items, live weights and the Location Store): descriptors in a real Redis
// (and the in-memory store for the in-process case), pair exclusion, single
// initiator by RID order, monitoring states, stale candidates, live
// weights, failures.

import (
	"errors"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

func objectClient(b *routemesh.MeshBuilder) {
	b.SetObjectRole(routemesh.ObjectClient).Channel("lobby").Client()
}

func TestContract_Auto_DescriptorPublishedRenewedAndDeleted(t *testing.T) {
	_, store := redisStore(t)
	// A 1 s lease (renewed every 333 ms): with fastDiscovery's 500 ms, a
	// renewal loop a third of a second behind on a loaded machine let the
	// descriptor lapse, and the check below fail.
	disc := fastDiscovery
	disc.DescriptorTTL = time.Second
	o := zlink.NewOptions().SetLocationStore(store)
	o.AddRouteMesh(autoMesh).SetRoutingIDPrefix("game").ConfigureDiscovery(disc).
		SetObjectRole(routemesh.ObjectServer).Channel("match").Server().SetWeight(7)
	o.SetLogger(testLogger(t))
	h, err := zlink.Start(ctxT(t, 10*time.Second), o)
	if err != nil {
		t.Fatal(err)
	}
	n := h.Mesh(autoMesh)
	if !strings.HasPrefix(n.RID(), "game-") || n.Generation() == 0 {
		t.Fatalf("rid %q generation %d", n.RID(), n.Generation())
	}
	d, err := descriptorOf(t, store, n.RID())
	if err != nil {
		t.Fatalf("descriptor after Start: %v", err)
	}
	if d.Generation != n.Generation() || d.Endpoint != n.Endpoint() || d.Revision != 1 ||
		d.Servers["match"] != 7 || d.ObjectRole != location.RoleServer || d.SecurityIdentity == "" ||
		d.SecurityIdentity == n.RID() || d.Protocol == 0 || d.Draining {
		t.Fatalf("descriptor %+v", d)
	}
	// The lease is renewed: the descriptor outlives its TTL twice over.
	started := time.Now()
	waitFor(t, "descriptor alive after 2 TTLs", 10*time.Second, func() bool {
		_, err := descriptorOf(t, store, n.RID())
		if err != nil {
			t.Fatalf("descriptor lost while its owner runs: %v", err)
		}
		return time.Since(started) > 2*disc.DescriptorTTL
	})
	// Revision changes republish: weight, then drain.
	if err := n.SetWeight(ctxT(t, 5*time.Second), "match", 9); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "weight in descriptor", 5*time.Second, func() bool {
		d, err := descriptorOf(t, store, n.RID())
		return err == nil && d.Revision == 2 && d.Servers["match"] == 9
	})
	if err := n.Drain(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drain in descriptor", 5*time.Second, func() bool {
		d, err := descriptorOf(t, store, n.RID())
		return err == nil && d.Draining && d.Revision == 3
	})
	stopHost(t, h)
	if _, err := descriptorOf(t, store, n.RID()); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("descriptor after Stop: %v, want ErrNotFound", err)
	}
}

func TestContract_Auto_ObjectClientPairExcluded(t *testing.T) {
	for _, kind := range []string{"redis", "memory"} {
		t.Run(kind, func(t *testing.T) {
			var store location.Store
			if kind == "redis" {
				_, store = redisStore(t)
			} else {
				store = memStore(t)
			}
			a := autoNode(t, store, "a", objectClient)
			b := autoNode(t, store, "b", objectClient)
			waitPeerState(t, a, b.RID(), routemesh.PeerNotRequired)
			waitPeerState(t, b, a.RID(), routemesh.PeerNotRequired)
			// Several more rounds: never NotConnected, never a connection
			// attempt.
			for range 5 {
				waitRounds(t, a, 1)
				for _, n := range []*routemesh.Node{a, b} {
					st := status(t, n)
					if st.CountPeers(routemesh.PeerNotConnected) != 0 || st.CountPeers(routemesh.PeerReady) != 0 ||
						st.CountPeers(routemesh.PeerConnecting) != 0 {
						t.Fatalf("%s: excluded pair shows %+v", n.RID(), st.Peers)
					}
					if st.Counters["handshake_rejects"] != 0 {
						t.Fatalf("%s: an excluded pair was dialled (%d rejects)", n.RID(), st.Counters["handshake_rejects"])
					}
				}
			}
			// A third Object Client with a weight-0 Server membership needs
			// connections with both.
			c := autoNode(t, store, "c", func(b *routemesh.MeshBuilder) {
				b.SetObjectRole(routemesh.ObjectClient).Channel("match").Server().SetWeight(0)
			})
			waitPeerState(t, a, c.RID(), routemesh.PeerReady)
			waitPeerState(t, b, c.RID(), routemesh.PeerReady)
			waitPeerState(t, c, a.RID(), routemesh.PeerReady)
			waitPeerState(t, c, b.RID(), routemesh.PeerReady)
			if p, _ := status(t, a).Peer(b.RID()); p.State != routemesh.PeerNotRequired {
				t.Fatalf("a/b after c joined: %+v", p)
			}
		})
	}
}

func TestContract_Auto_SmallerRIDDials(t *testing.T) {
	_, store := redisStore(t)
	var nodes []*routemesh.Node
	for range 5 {
		nodes = append(nodes, autoNode(t, store, "n", nil))
	}
	waitFullMesh(t, nodes...)
	for _, x := range nodes {
		st := status(t, x)
		if len(st.Peers) != len(nodes)-1 {
			t.Fatalf("%s shows %d peers, want %d: %+v", x.RID(), len(st.Peers), len(nodes)-1, st.Peers)
		}
		for _, y := range nodes {
			if x == y {
				continue
			}
			px, _ := st.Peer(y.RID())
			py, _ := status(t, y).Peer(x.RID())
			smaller := x.RID()
			if y.RID() < smaller {
				smaller = y.RID()
			}
			if px.Outbound != (x.RID() < y.RID()) || px.Pipe != py.Pipe || !strings.HasPrefix(px.Pipe, smaller+"/") {
				t.Fatalf("%s–%s: outbound %v, pipes %q / %q; the smaller RID must dial the one connection",
					x.RID(), y.RID(), px.Outbound, px.Pipe, py.Pipe)
			}
			if !px.Descriptor {
				t.Fatalf("automatic peer without descriptor flag: %+v", px)
			}
		}
		if got := st.Counters["handshake_rejects"]; got != 0 {
			t.Fatalf("%s: %d handshake rejects; a single initiator never races", x.RID(), got)
		}
	}
}

func TestContract_Auto_MonitoringNotConnectedVsNotRequired(t *testing.T) {
	store := memStore(t)
	a := autoNode(t, store, "m", objectClient)
	self, err := descriptorOf(t, store, a.RID())
	if err != nil {
		t.Fatal(err)
	}
	put := func(rid string, role location.ObjectRole, servers map[string]uint16) {
		d := location.Descriptor{Mesh: autoMesh, RID: rid, Generation: 77, Revision: 1, Endpoint: "tcp://127.0.0.1:1",
			Servers: servers, ObjectRole: role, SecurityIdentity: self.SecurityIdentity, Protocol: self.Protocol,
			Discovers: true} // automatic nodes (each dials the RIDs after its own)
		if err := store.PutDescriptor(ctxT(t, 2*time.Second), d, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	put("z-dead", location.RoleServer, nil)                          // larger RID: a dials, nothing listens
	put("a-waits", location.RoleServer, nil)                         // smaller RID: a waits for it to dial
	put("z-oc", location.RoleClient, nil)                            // excluded pair
	put("z-oc0", location.RoleClient, map[string]uint16{"match": 0}) // weight 0 membership: required
	waitPeerState(t, a, "z-oc", routemesh.PeerNotRequired)
	waitPeerState(t, a, "z-dead", routemesh.PeerNotConnected)
	waitPeerState(t, a, "z-oc0", routemesh.PeerNotConnected)
	p, _ := status(t, a).Peer("a-waits")
	if p.State != routemesh.PeerConnecting && p.State != routemesh.PeerNotConnected {
		t.Fatalf("awaited peer: %+v", p)
	}
	if p.Outbound {
		t.Fatalf("awaited peer shown as outbound: %+v", p)
	}
	// After the grace period a missing inbound connection is a failure.
	waitPeerState(t, a, "a-waits", routemesh.PeerNotConnected)
	st := status(t, a)
	if st.CountPeers(routemesh.PeerNotConnected) != 3 || st.CountPeers(routemesh.PeerNotRequired) != 1 {
		t.Fatalf("peers %+v", st.Peers)
	}
	// A descriptor that goes away takes its entry with it.
	if err := store.DeleteDescriptor(ctxT(t, 2*time.Second), autoMesh, "z-dead", 77); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "z-dead withdrawn", 5*time.Second, func() bool {
		_, ok := status(t, a).Peer("z-dead")
		return !ok
	})
}

func TestContract_Auto_StaleCandidatesEndInOneReadyConnection(t *testing.T) {
	_, store := redisStore(t)
	// A refusal frame may be lost when the listener closes right after
	// sending it; then the dialer's handshake timeout ends the attempt.
	a := autoNode(t, store, "a", func(b *routemesh.MeshBuilder) {
		b.HandleDirectRequest("echo", echo).ConfigureRouterSocket(routemesh.SocketConfig{ReceiveTimeout: time.Second})
	})
	b := autoNode(t, store, "b", func(b *routemesh.MeshBuilder) { b.HandleDirectRequest("echo", echo) })
	waitFullMesh(t, a, b)
	pipe := readyPeers(t, a)[b.RID()].Pipe
	real, err := descriptorOf(t, store, b.RID())
	if err != nil {
		t.Fatal(err)
	}
	// 1. A stale descriptor of a previous lifecycle at b's endpoint (another
	// RID, not renewed): a dials it, b's handshake proves another RID, the
	// candidate never becomes ready and goes with its lease.
	stale := real.Clone()
	stale.RID, stale.Generation = "b-stale", 42
	if err := store.PutDescriptor(ctxT(t, 2*time.Second), stale, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stale candidate refused", 10*time.Second, func() bool {
		p, ok := status(t, a).Peer("b-stale")
		if ok && p.State == routemesh.PeerReady {
			t.Fatalf("stale candidate became ready: %+v", p)
		}
		return ok && p.State == routemesh.PeerNotConnected && p.LastError != ""
	})
	waitFor(t, "stale candidate expired", 10*time.Second, func() bool {
		_, ok := status(t, a).Peer("b-stale")
		return !ok
	})
	// 2. A stale snapshot of b itself with an old generation replaces b's
	// record for a moment: the healthy connection is not torn down, b's
	// lease puts its own descriptor back, and one connection remains.
	old := real.Clone()
	old.Generation = real.Generation ^ 0xff
	if err := store.PutDescriptor(ctxT(t, 2*time.Second), old, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b republished its own lifecycle", 10*time.Second, func() bool {
		d, err := descriptorOf(t, store, b.RID())
		return err == nil && d.Generation == b.Generation()
	})
	waitRounds(t, a, 3)
	for _, n := range []*routemesh.Node{a, b} {
		st := status(t, n)
		if len(st.Peers) != 1 || st.Peers[0].State != routemesh.PeerReady || st.Peers[0].Pipe != pipe {
			t.Fatalf("%s: want the one original connection %q, have %+v", n.RID(), pipe, st.Peers)
		}
		if st.Counters["peers_lost"] != 0 {
			t.Fatalf("%s lost a peer", n.RID())
		}
	}
	if _, err := a.CallNode(ctxT(t, 5*time.Second), b.RID(), "echo", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestContract_Auto_WeightsLiveWithoutReconnect(t *testing.T) {
	_, store := redisStore(t)
	a := autoNode(t, store, "a", func(b *routemesh.MeshBuilder) { b.Channel("match").Client() })
	b := autoNode(t, store, "b", func(b *routemesh.MeshBuilder) {
		b.Channel("match").Server().SetWeight(100).HandleRequest("who", func(c *routemesh.Context, _ []byte) ([]byte, error) {
			return []byte("b"), nil
		})
	})
	waitFullMesh(t, a, b)
	pipe := readyPeers(t, a)[b.RID()].Pipe
	call := func() error {
		_, err := a.Call(ctxT(t, 5*time.Second), "match", "who", nil)
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	// Push path.
	if err := b.SetWeight(ctxT(t, 5*time.Second), "match", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "weight 0 reaches a", 5*time.Second, func() bool { return errors.Is(call(), zlink.ErrNoTarget) })
	if err := b.SetWeight(ctxT(t, 5*time.Second), "match", 50); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "weight 50 reaches a", 5*time.Second, func() bool { return call() == nil })
	// Poll path: a revision that only the Location Store has (the push was
	// lost) converges from the next discovery round.
	d, err := descriptorOf(t, store, b.RID())
	if err != nil {
		t.Fatal(err)
	}
	d.Revision += 10
	d.Servers = map[string]uint16{"match": 0}
	if err := store.PutDescriptor(ctxT(t, 2*time.Second), d, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "store-only revision reaches a", 5*time.Second, func() bool { return errors.Is(call(), zlink.ErrNoTarget) })
	for _, n := range []*routemesh.Node{a, b} {
		st := status(t, n)
		if len(st.Peers) != 1 || st.Peers[0].Pipe != pipe || st.Counters["peers_lost"] != 0 {
			t.Fatalf("%s reconnected for a weight change: %+v", n.RID(), st.Peers)
		}
	}
}

func TestContract_Auto_KilledNodeLeavesRestartedNodeJoins(t *testing.T) {
	srv, store := redisStore(t)
	a := autoNode(t, store, "a", nil)
	c1, rid1 := startAutoChild(t, srv.Addr(), "c")
	waitPeerState(t, a, rid1, routemesh.PeerReady)
	c1.kill(t) // no goodbye
	// Liveness removes it from a's targets; its lease expires.
	waitFor(t, "killed peer gone from targets", 10*time.Second, func() bool {
		_, ok := readyPeers(t, a)[rid1]
		return !ok
	})
	if _, err := a.CallNode(ctxT(t, time.Second), rid1, "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("request to killed node: %v, want ErrNoTarget", err)
	}
	waitFor(t, "killed node's descriptor expires", 10*time.Second, func() bool {
		_, err := descriptorOf(t, store, rid1)
		return errors.Is(err, location.ErrNotFound)
	})
	waitFor(t, "killed node withdrawn from a", 10*time.Second, func() bool {
		_, ok := status(t, a).Peer(rid1)
		return !ok
	})
	// Restart: a new RID and generation, and a connects to it.
	c2, rid2 := startAutoChild(t, srv.Addr(), "c")
	if rid2 == rid1 {
		t.Fatalf("restarted automatic node reused RID %s", rid1)
	}
	waitPeerState(t, a, rid2, routemesh.PeerReady)
	if _, err := a.CallNode(ctxT(t, 5*time.Second), rid2, "echo", []byte("x")); err != nil {
		t.Fatal(err)
	}
	c2.kill(t)
}

func TestContract_Auto_RedisRestartKeepsConnections(t *testing.T) {
	srv, store := redisStore(t)
	a := autoNode(t, store, "a", nil)
	b := autoNode(t, store, "b", nil)
	waitFullMesh(t, a, b)
	pipe := readyPeers(t, a)[b.RID()].Pipe
	srv.Restart(t) // empty: every descriptor is gone
	waitFor(t, "descriptors republished", 15*time.Second, func() bool {
		_, ea := descriptorOf(t, store, a.RID())
		_, eb := descriptorOf(t, store, b.RID())
		return ea == nil && eb == nil
	})
	for _, n := range []*routemesh.Node{a, b} {
		st := status(t, n)
		if len(st.Peers) != 1 || st.Peers[0].Pipe != pipe || st.Peers[0].State != routemesh.PeerReady {
			t.Fatalf("%s: connection changed across a Redis restart: %+v", n.RID(), st.Peers)
		}
	}
	// Discovery works again: a new node joins both.
	c := autoNode(t, store, "c", nil)
	waitFullMesh(t, a, b, c)
	if got := readyPeers(t, a)[b.RID()].Pipe; got != pipe {
		t.Fatalf("a–b pipe %q → %q", pipe, got)
	}
}

func TestContract_Auto_DescriptorBasedManualEndpoint(t *testing.T) {
	store := memStore(t)
	ep := freeEndpoint(t)
	// b1: a manual node without a store, so it has no descriptor.
	o1 := zlink.NewOptions()
	o1.AddRouteMesh(autoMesh).SetRoutingID("b").Listen(ep).ConfigureLiveness(fastLiveness)
	h1 := startHost(t, o1)
	b1 := h1.Mesh(autoMesh)
	oa := zlink.NewOptions().SetLocationStore(store)
	oa.AddRouteMesh(autoMesh).SetRoutingID("a").SetObjectRole(routemesh.ObjectServer).
		ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).AddPeer(ep, "")
	a := startHost(t, oa).Mesh(autoMesh)
	waitPeerState(t, a, "b", routemesh.PeerReady)
	p, _ := status(t, a).Peer("b")
	if p.Descriptor {
		t.Fatalf("endpoint-only connection claims a descriptor: %+v", p)
	}
	// A matching descriptor appears while the endpoint-only connection is
	// healthy: it is not torn down and the intent is not replaced yet.
	self, _ := descriptorOf(t, store, "a")
	fake := location.Descriptor{Mesh: autoMesh, RID: "b", Generation: b1.Generation(), Revision: 1, Endpoint: ep,
		ObjectRole: location.RoleNone, SecurityIdentity: self.SecurityIdentity, Protocol: self.Protocol}
	if err := store.PutDescriptor(ctxT(t, 2*time.Second), fake, fastDiscovery.DescriptorTTL); err != nil {
		t.Fatal(err)
	}
	waitRounds(t, a, 3)
	q, _ := status(t, a).Peer("b")
	if q.State != routemesh.PeerReady || q.Pipe != p.Pipe || q.Descriptor {
		t.Fatalf("healthy endpoint-only connection changed: %+v → %+v", p, q)
	}
	// b1 goes; b2 (with the store, so with a descriptor) takes the endpoint.
	stopHost(t, h1)
	o2 := zlink.NewOptions().SetLocationStore(store)
	o2.AddRouteMesh(autoMesh).SetRoutingID("b").Listen(ep).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery)
	b2 := startHost(t, o2).Mesh(autoMesh)
	waitFor(t, "a connected to b2 through its descriptor", 15*time.Second, func() bool {
		p, ok := status(t, a).Peer("b")
		return ok && p.State == routemesh.PeerReady && p.Descriptor
	})
	// a (the smaller RID) arbitrates and is ready first; b2 follows on a's
	// ready signal.
	waitPeerState(t, b2, "a", routemesh.PeerReady)
}

// A manual node that publishes its descriptor never dials from
// descriptors, so reaching it must not depend on how its RID sorts:
// automatic nodes dial it, also when its RID is the smaller one.
func TestAuto_ManualNodeReachableWhateverItsRID(t *testing.T) {
	store := memStore(t)
	om := zlink.NewOptions().SetLocationStore(store)
	om.AddRouteMesh(autoMesh).SetRoutingID("0-manual").ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
		Channel("match").Server().HandleRequest("echo", echo)
	manual := startHost(t, om).Mesh(autoMesh)
	auto := autoNode(t, store, "s", func(b *routemesh.MeshBuilder) { b.Channel("match").Client() })
	waitPeerState(t, auto, "0-manual", routemesh.PeerReady)
	waitPeerState(t, manual, auto.RID(), routemesh.PeerReady)
	if _, err := auto.Call(ctxT(t, 5*time.Second), "match", "echo", nil); err != nil {
		t.Fatalf("call to the manual node: %v", err)
	}
}

// Two live processes must not serve under one fixed RID: the second is
// refused, naming the RID and the holder.
func TestRID_LiveHolderRefusesASecondNode(t *testing.T) {
	store := memStore(t)
	// The second start waits 1.5 TTLs for the holder's lease to lapse; the
	// holder renews every TTL/3. A TTL of 1 s leaves it two renewals of
	// slack on a loaded machine: with 300 ms, one renewal late by 200 ms
	// let the lease lapse and the second node start.
	disc := routemesh.DiscoveryConfig{DescriptorTTL: time.Second, Poll: 50 * time.Millisecond}
	start := func() (*zlink.Host, error) {
		o := zlink.NewOptions().SetLocationStore(store).SetLogger(testLogger(t))
		o.AddRouteMesh(autoMesh).SetRoutingID("dup").ConfigureLiveness(fastLiveness).ConfigureDiscovery(disc)
		return zlink.Start(ctxT(t, 10*time.Second), o)
	}
	first, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopHost(t, first) })
	second, err := start()
	if err == nil {
		stopHost(t, second)
		t.Fatal("a second node started under a RID a live node holds")
	}
	if !errors.Is(err, routemesh.ErrRIDInUse) || !strings.Contains(err.Error(), `"dup"`) ||
		!strings.Contains(err.Error(), first.Mesh(autoMesh).Endpoint()) {
		t.Fatalf("second start: %v, want ErrRIDInUse naming the RID and the holder", err)
	}
}

// A holder that died (its lease is still in the store) delays a restart
// under the same RID only until its lease runs out.
func TestRID_DeadHolderIsWaitedOutThenReplaced(t *testing.T) {
	store := memStore(t)
	disc := routemesh.DiscoveryConfig{DescriptorTTL: 400 * time.Millisecond, Poll: 50 * time.Millisecond}
	o := zlink.NewOptions().SetLocationStore(store)
	o.AddRouteMesh(autoMesh).SetRoutingID("phoenix").ConfigureLiveness(fastLiveness).ConfigureDiscovery(disc)
	h := startHost(t, o)
	self, err := descriptorOf(t, store, "phoenix")
	if err != nil {
		t.Fatal(err)
	}
	stopHost(t, h) // deletes its descriptor; put back a "dead" one that nobody renews
	dead := self.Clone()
	dead.Generation ^= 0xabc
	if err := store.PutDescriptor(ctxT(t, 2*time.Second), dead, disc.DescriptorTTL); err != nil {
		t.Fatal(err)
	}
	o2 := zlink.NewOptions().SetLocationStore(store)
	o2.AddRouteMesh(autoMesh).SetRoutingID("phoenix").ConfigureLiveness(fastLiveness).ConfigureDiscovery(disc)
	h2 := startHost(t, o2)
	d, err := descriptorOf(t, store, "phoenix")
	if err != nil || d.Generation != h2.Mesh(autoMesh).Generation() {
		t.Fatalf("descriptor after the restart: %+v %v", d, err)
	}
}
