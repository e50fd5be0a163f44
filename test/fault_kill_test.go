package test

import (
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_KillNineServerUnderLoad: one of two Servers is a separate
// process, killed with SIGKILL while calls run, then restarted with the
// same fixed RID on the same endpoint. Its in-flight calls end
// ErrPeerLost, new calls go to the other Server, the restarted one is
// taken back, and every call is accounted for.
func TestFault_KillNineServerUnderLoad(t *testing.T) {
	ep := freeEndpoint(t)
	child := startChild(t, "k1", ep)
	o2 := zlink.NewOptions()
	o2.AddRouteMesh(childMesh).SetRoutingID("k2").ConfigureLiveness(fastLiveness).
		Channel("echo").Server().HandleRequest("echo", echo)
	s2 := startHost(t, o2).Mesh(childMesh)
	oc := zlink.NewOptions()
	oc.AddRouteMesh(childMesh).SetRoutingID("c").ConfigureLiveness(fastLiveness).
		AddPeer(ep, "k1").AddPeer(s2.Endpoint(), "k2").Channel("echo").Client()
	c := startHost(t, oc).Mesh(childMesh)
	waitPeerState(t, c, "k1", routemesh.PeerReady)
	waitPeerState(t, c, "k2", routemesh.PeerReady)

	load := startLedger(t, c, 4)
	waitFor(t, "both Servers serving", 5*time.Second, func() bool { return load.since("k1") > 20 && load.since("k2") > 20 })
	child.kill(t)
	waitFor(t, "the client losing k1", 5*time.Second, func() bool {
		p, ok := status(t, c).Peer("k1")
		return !ok || p.State != routemesh.PeerReady
	})
	load.mark()
	waitFor(t, "calls served by k2 meanwhile", 5*time.Second, func() bool { return load.since("k2") > 50 })
	startChild(t, "k1", ep) // the same fixed RID, a new generation
	waitPeerState(t, c, "k1", routemesh.PeerReady)
	load.mark()
	waitFor(t, "the restarted k1 serving", 10*time.Second, func() bool { return load.since("k1") > 20 })
	load.check(t)
}
