package test

// Liveness: the documented defaults are what the public configuration
// shows, and a slow handler never delays heartbeats (reading the wire and
// the liveness machine do not wait for handlers).

import (
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func TestLiveness_DefaultsVisibleInPublicConfig(t *testing.T) {
	want := routemesh.LivenessConfig{Interval: 500 * time.Millisecond, MaxGap: 5, LastHeard: 3 * time.Second}
	if got := routemesh.DefaultLivenessConfig(); got != want {
		t.Fatalf("DefaultLivenessConfig() = %+v, want %+v", got, want)
	}
	if got := routemesh.DefaultConfig().Liveness; got != want {
		t.Fatalf("DefaultConfig().Liveness = %+v, want %+v", got, want)
	}
	if got := routemesh.NewMeshBuilder("game").Config().Liveness; got != want {
		t.Fatalf("a new builder's liveness = %+v, want %+v", got, want)
	}
	// Zero fields keep their defaults; set fields are kept.
	o := zlink.NewOptions()
	b := o.AddRouteMesh("game").ConfigureLiveness(routemesh.LivenessConfig{})
	if got := b.Config().Liveness; got != want {
		t.Fatalf("ConfigureLiveness(zero) = %+v, want the defaults %+v", got, want)
	}
	b.ConfigureLiveness(routemesh.LivenessConfig{Interval: 100 * time.Millisecond})
	if got := b.Config().Liveness; got != (routemesh.LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 5, LastHeard: 3 * time.Second}) {
		t.Fatalf("ConfigureLiveness(interval only) = %+v", got)
	}
	b.ConfigureLiveness(routemesh.LivenessConfig{MaxGap: 9, LastHeard: time.Second})
	if got := b.Config().Liveness; got != (routemesh.LivenessConfig{Interval: 500 * time.Millisecond, MaxGap: 9, LastHeard: time.Second}) {
		t.Fatalf("ConfigureLiveness(gap and last heard) = %+v", got)
	}
	// A node started on defaults runs: its peers are kept by the default
	// heartbeat machine.
	srv := startHost(t, o).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").AddPeer(srv.Endpoint(), srv.RID())
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, srv.RID(), routemesh.PeerReady)
}

func TestLiveness_SlowHandlerNeverDelaysHeartbeats(t *testing.T) {
	// b runs one handler at a time per owner; its Node-direct handler and
	// its channel handler both block for several LastHeard periods.
	// Heartbeats every 50 ms, a silence limit of a second: a loaded
	// machine's stall cannot fail the test, heartbeats stuck behind the
	// handlers would (they are held for three limits).
	direct, channel := newBlockGate(), newBlockGate()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) {
		m.ConfigureLiveness(steadyLiveness).SetHandlerConcurrency(1).HandleDirectRequest("slow", direct.request).
			Channel("match").Server().SetConcurrency(1).HandleRequest("slow", channel.request)
	})
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) {
		m.ConfigureLiveness(steadyLiveness).Channel("match").Client()
	}, b)
	direct.closeAtCleanup(t)
	channel.closeAtCleanup(t)
	pipeA, _ := status(t, a).Peer("b")
	pipeB, _ := status(t, b).Peer("a")

	slowDirect := goRequest(ctxT(t, 30*time.Second), a, "b", "slow", []byte("d"))
	slowChannel := make(chan error, 1)
	go func() {
		out, err := a.Call(ctxT(t, 30*time.Second), "match", "slow", []byte("c"))
		if err == nil && string(out) != "c" {
			err = errorString("channel reply " + string(out))
		}
		slowChannel <- err
	}()
	direct.waitEntered(t)
	channel.waitEntered(t)

	// Three LastHeard periods (60 heartbeat intervals) with both of b's
	// owners stuck: neither side may lose the other or change connection.
	window := 3 * steadyLiveness.LastHeard
	holdsFor(t, "both sides Ready on the same pipe, no peer lost", window, func() bool {
		sa, sb := status(t, a), status(t, b)
		pa, _ := sa.Peer("b")
		pb, _ := sb.Peer("a")
		return pa.State == routemesh.PeerReady && pb.State == routemesh.PeerReady &&
			pa.Pipe == pipeA.Pipe && pb.Pipe == pipeB.Pipe &&
			sa.Counters["peers_lost"] == 0 && sb.Counters["peers_lost"] == 0
	})
	direct.open()
	channel.open()
	wantReply(t, "slow Node-direct call", awaitOutcome(t, "slow Node-direct call", slowDirect, 5*time.Second), []byte("d"))
	select {
	case err := <-slowChannel:
		if err != nil {
			t.Fatalf("slow channel call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow channel call: no result 5 s after release")
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
