package test

// Contract tests for peer connections in manual topology, over real ZeroMQ
// sockets on 127.0.0.1.

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

func memStore(t *testing.T) location.Store {
	s := location.NewMemory()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract_Peers_ManualTwoSidedDialEndsInOneReadyConnection(t *testing.T) {
	// Both sides name each other's endpoint and their dials are released at
	// the same instant (see simultaneousPair).
	var handled atomic.Int64
	a, b2 := simultaneousPair(t, func(c *routemesh.Context, p []byte) ([]byte, error) {
		handled.Add(1)
		return echo(c, p)
	})
	// Both sides agree on the one surviving pipe: one node dialed it, the
	// other accepted it.
	waitFor(t, "both sides on one pipe", 10*time.Second, func() bool { return oneReadyPipe(t, a, b2) })
	pa, _ := status(t, a).Peer("b")
	pb, _ := status(t, b2).Peer("a")
	if pa.Outbound == pb.Outbound {
		t.Fatalf("pipe %s: outbound on a %v and on b %v", pa.Pipe, pa.Outbound, pb.Outbound)
	}
	// Messages are delivered exactly once over it.
	for i := 0; i < 20; i++ {
		if _, err := a.CallNode(ctxT(t, 5*time.Second), "b", "echo", []byte("x")); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := handled.Load(); got != 20 {
		t.Fatalf("b's handler ran %d times for 20 requests", got)
	}
	// The duplicate was refused before ready: no side lost a ready peer.
	for _, n := range []*routemesh.Node{a, b2} {
		if lost := status(t, n).Counters["peers_lost"]; lost != 0 {
			t.Fatalf("%s: peers_lost = %d, want 0", n.RID(), lost)
		}
	}
}

func TestContract_Peers_ManualNotRequiredForTwoObjectClients(t *testing.T) {
	store := memStore(t)
	ob := zlink.NewOptions().SetLocationStore(store)
	ob.AddRouteMesh("game").SetRoutingID("b").SetObjectRole(routemesh.ObjectClient).Channel("lobby").Client()
	b := startHost(t, ob).Mesh("game")
	oa := zlink.NewOptions().SetLocationStore(store)
	oa.AddRouteMesh("game").SetRoutingID("a").SetObjectRole(routemesh.ObjectClient).
		Channel("lobby").Client().AddPeer(b.Endpoint(), "")
	a := startHost(t, oa).Mesh("game")

	waitPeerState(t, a, "b", routemesh.PeerNotRequired)
	st := status(t, a)
	if st.CountPeers(routemesh.PeerReady) != 0 || st.CountPeers(routemesh.PeerNotConnected) != 0 {
		t.Fatalf("NotRequired pair must be neither Ready nor NotConnected: %+v", st.Peers)
	}
	// Closed before ready, and not retried for the same configuration: the
	// handshake count stays put.
	// The window covers several redial backoffs (50 ms, 100 ms, …).
	rejects := st.Counters["handshake_rejects"]
	holdsFor(t, "no redial of a NotRequired intent", 400*time.Millisecond, func() bool {
		st := status(t, a)
		p, _ := st.Peer("b")
		return st.Counters["handshake_rejects"] == rejects && p.State == routemesh.PeerNotRequired
	})
	if _, ok := status(t, b).Peer("a"); ok {
		t.Fatalf("b must not keep a as a peer: %+v", status(t, b).Peers)
	}
	// Node direct to an Object Client never dials: NoTarget.
	if _, err := a.CallNode(ctxT(t, time.Second), "b", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("request to Object Client: %v, want ErrNoTarget", err)
	}
}

func TestContract_Peers_ServerMembershipWithWeightZeroNeedsConnection(t *testing.T) {
	store := memStore(t)
	ob := zlink.NewOptions().SetLocationStore(store)
	ob.AddRouteMesh("game").SetRoutingID("b").SetObjectRole(routemesh.ObjectClient).
		Channel("match").Server().SetWeight(0)
	b := startHost(t, ob).Mesh("game")
	oa := zlink.NewOptions().SetLocationStore(store)
	oa.AddRouteMesh("game").SetRoutingID("a").SetObjectRole(routemesh.ObjectClient).
		Channel("lobby").Client().AddPeer(b.Endpoint(), "b")
	a := startHost(t, oa).Mesh("game")
	waitPeerState(t, a, "b", routemesh.PeerReady)
	waitPeerState(t, b, "a", routemesh.PeerReady)
}

func TestContract_Peers_ChannelClientRolesDoNotCreateNeed(t *testing.T) {
	// Channel Client roles (and fanout registrations) do not count as
	// Server membership: two Object Clients stay NotRequired.
	store := memStore(t)
	ob := zlink.NewOptions().SetLocationStore(store)
	ob.AddRouteMesh("game").SetRoutingID("b").SetObjectRole(routemesh.ObjectClient).Channel("match").Client()
	b := startHost(t, ob).Mesh("game")
	oa := zlink.NewOptions().SetLocationStore(store)
	oa.AddRouteMesh("game").SetRoutingID("a").SetObjectRole(routemesh.ObjectClient).
		Channel("match").Client().AddPeer(b.Endpoint(), "b")
	oa.AddFanoutPublisher(fanout.PublisherConfig{Channel: "news"})
	a := startHost(t, oa).Mesh("game")
	waitPeerState(t, a, "b", routemesh.PeerNotRequired)
}

func TestContract_Peers_MonitoringSeparatesNotConnectedFromNotRequired(t *testing.T) {
	store := memStore(t)
	// A required peer that is not there: NotConnected (a failure).
	oa := zlink.NewOptions().SetLocationStore(store)
	dead := "tcp://127.0.0.1:1" // nothing listens on port 1
	ob := zlink.NewOptions().SetLocationStore(store)
	ob.AddRouteMesh("game").SetRoutingID("oc").SetObjectRole(routemesh.ObjectClient).Channel("lobby").Client()
	oc := startHost(t, ob).Mesh("game")
	oa.AddRouteMesh("game").SetRoutingID("a").SetObjectRole(routemesh.ObjectClient).
		AddPeer(dead, "ghost").AddPeer(oc.Endpoint(), "oc")
	a := startHost(t, oa).Mesh("game")
	waitPeerState(t, a, "ghost", routemesh.PeerNotConnected)
	waitPeerState(t, a, "oc", routemesh.PeerNotRequired)
	st := status(t, a)
	if st.CountPeers(routemesh.PeerNotConnected) != 1 || st.CountPeers(routemesh.PeerNotRequired) != 1 {
		t.Fatalf("peers %+v", st.Peers)
	}
}

func TestContract_Peers_MeshNamesNeverMix(t *testing.T) {
	// One process, two meshes, same RIDs in each: nothing crosses.
	o1 := zlink.NewOptions()
	o1.AddRouteMesh("m1").SetRoutingID("x").ConfigureLiveness(fastLiveness).HandleDirectRequest("echo", echo)
	o1.AddRouteMesh("m2").SetRoutingID("x").ConfigureLiveness(fastLiveness).HandleDirectRequest("echo", echo)
	h1 := startHost(t, o1)
	o2 := zlink.NewOptions()
	o2.AddRouteMesh("m1").SetRoutingID("y").ConfigureLiveness(fastLiveness).AddPeer(h1.Mesh("m1").Endpoint(), "x")
	// m2's node dials m1's endpoint by mistake: refused, never ready.
	o2.AddRouteMesh("m2").SetRoutingID("y").ConfigureLiveness(fastLiveness).AddPeer(h1.Mesh("m1").Endpoint(), "")
	h2 := startHost(t, o2)
	waitPeerState(t, h2.Mesh("m1"), "x", routemesh.PeerReady)
	waitFor(t, "m2 refused by m1", 10*time.Second, func() bool {
		st := status(t, h2.Mesh("m2"))
		return len(st.Peers) == 1 && st.Peers[0].State == routemesh.PeerNotConnected && st.Peers[0].LastError != ""
	})
	if _, ok := status(t, h1.Mesh("m1")).Peer("y"); !ok {
		t.Fatalf("m1/x should see m1/y")
	}
	if st := status(t, h1.Mesh("m2")); len(st.Peers) != 0 {
		t.Fatalf("m2/x must have no peers, has %+v", st.Peers)
	}
	if _, err := h2.Mesh("m2").CallNode(ctxT(t, time.Second), "x", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("m2/y → x: %v, want ErrNoTarget", err)
	}
	if _, err := h2.Mesh("m1").CallNode(ctxT(t, 5*time.Second), "x", "echo", nil); err != nil {
		t.Fatalf("m1/y → m1/x: %v", err)
	}
}

func TestPeers_TrustProfile(t *testing.T) {
	ob := zlink.NewOptions()
	ob.AddRouteMesh("game").SetRoutingID("b").SetTrust(routemesh.TrustConfig{Secret: []byte("s3cret")}).HandleDirectRequest("echo", echo)
	b := startHost(t, ob).Mesh("game")

	good := zlink.NewOptions()
	good.AddRouteMesh("game").SetRoutingID("a").SetTrust(routemesh.TrustConfig{Secret: []byte("s3cret")}).AddPeer(b.Endpoint(), "b")
	a := startHost(t, good).Mesh("game")
	waitPeerState(t, a, "b", routemesh.PeerReady)

	for name, secret := range map[string][]byte{"wrong secret": []byte("other"), "no secret": nil} {
		bad := zlink.NewOptions()
		bad.AddRouteMesh("game").SetRoutingID("m-"+name[:2]).SetTrust(routemesh.TrustConfig{Secret: secret}).AddPeer(b.Endpoint(), "b")
		m := startHost(t, bad).Mesh("game")
		waitPeerState(t, m, "b", routemesh.PeerNotConnected)
		if _, err := m.CallNode(ctxT(t, time.Second), "b", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
			t.Fatalf("%s: request %v, want ErrNoTarget", name, err)
		}
	}
	if _, ok := status(t, b).Peer("m-wr"); ok {
		t.Fatal("b accepted a peer with the wrong secret")
	}
}

func TestPeers_ExpectedRIDMismatchFails(t *testing.T) {
	ob := zlink.NewOptions()
	ob.AddRouteMesh("game").SetRoutingID("b")
	b := startHost(t, ob).Mesh("game")
	oa := zlink.NewOptions()
	oa.AddRouteMesh("game").SetRoutingID("a").AddPeer(b.Endpoint(), "not-b")
	a := startHost(t, oa).Mesh("game")
	waitPeerState(t, a, "not-b", routemesh.PeerNotConnected)
	if _, ok := status(t, b).Peer("a"); ok {
		t.Fatal("b accepted a peer that expected another RID")
	}
}

func TestPeers_AuthFailureLoggedOncePerEndpointAndGeneration(t *testing.T) {
	ob := zlink.NewOptions()
	ob.AddRouteMesh("game").SetRoutingID("b").SetTrust(routemesh.TrustConfig{Secret: []byte("right")})
	b := startHost(t, ob).Mesh("game")
	// a has the wrong secret: it refuses b's proof on every attempt and
	// keeps redialing with backoff (one endpoint, one generation of b).
	var logs lockedBuffer
	oa := zlink.NewOptions()
	oa.AddRouteMesh("game").SetRoutingID("a").SetTrust(routemesh.TrustConfig{Secret: []byte("wrong")}).
		AddPeer(b.Endpoint(), "b").SetLogger(zerolog.New(&logs).Level(zerolog.WarnLevel))
	a := startHost(t, oa).Mesh("game")
	waitFor(t, "several refused attempts", 10*time.Second, func() bool {
		return status(t, a).Counters["handshake_rejects"] >= 3
	})
	if n := strings.Count(logs.String(), "handshake refused"); n != 1 {
		t.Fatalf("a logged %d authentication failures for one endpoint and generation, want 1:\n%s", n, logs.String())
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
