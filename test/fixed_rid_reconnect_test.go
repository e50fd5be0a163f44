package test

// A manual fixed-RID node restarts (a new lifecycle generation, same RID)
// while its peer still holds the old generation's connection: the old
// process is frozen, so its socket stays open and only liveness can tell it
// is gone. The new generation becomes ready at the peer only after liveness
// confirmed the old connection lost, and when the old process wakes up
// nothing it sends changes the current connection.

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func init() {
	if os.Getenv("ZLINK_FIXEDRID_CHILD") == "1" {
		runFixedRIDChild()
	}
}

// runFixedRIDChild runs a manual node with RID $ZLINK_FIXEDRID_RID that
// dials $ZLINK_FIXEDRID_PEER (expected RID "p"); its "who" handler answers
// "old". It prints "READY <endpoint>" and runs until killed or stdin closes.
func runFixedRIDChild() {
	o := zlink.NewOptions().SetLogger(zerolog.Nop())
	o.AddRouteMesh(childMesh).SetRoutingID(os.Getenv("ZLINK_FIXEDRID_RID")).ConfigureLiveness(fastLiveness).
		AddPeer(os.Getenv("ZLINK_FIXEDRID_PEER"), "p").
		HandleDirectRequest("who", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("old"), nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	h, err := zlink.Start(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stdout, "FAILED %v\n", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stdout, "READY %s\n", h.Mesh(childMesh).Endpoint())
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func TestPeers_FixedRIDRestartWhileOldConnectionAlive(t *testing.T) {
	// p's liveness only counts the last-heard time (its gap limit is far
	// away): no liveness can confirm the old connection gone sooner than
	// about pLiveness.LastHeard after the freeze.
	pLiveness := routemesh.LivenessConfig{Interval: fastLiveness.Interval, MaxGap: 50, LastHeard: fastLiveness.LastHeard}
	earliestLoss := pLiveness.LastHeard - 2*pLiveness.Interval
	_, p := startDirectNode(t, childMesh, "p", func(m *routemesh.MeshBuilder) { m.ConfigureLiveness(pLiveness) })
	old, _ := runChild(t, "old generation of x", "ZLINK_FIXEDRID_CHILD=1", "ZLINK_FIXEDRID_RID=x", "ZLINK_FIXEDRID_PEER="+p.Endpoint())
	waitPeerState(t, p, "x", routemesh.PeerReady)
	wantReply(t, "old generation", timedRequest(ctxT(t, 5*time.Second), p, "x", "who", nil), []byte("old"))
	first, _ := status(t, p).Peer("x")
	lostBefore := status(t, p).Counters["peers_lost"]

	// Freeze the old generation: its connection stays open and silent.
	old.stop(t)
	frozen := time.Now()
	// The new generation of x starts at once and dials p.
	ox := zlink.NewOptions()
	ox.AddRouteMesh(childMesh).SetRoutingID("x").ConfigureLiveness(fastLiveness).AddPeer(p.Endpoint(), "p").
		HandleDirectRequest("who", func(*routemesh.Context, []byte) ([]byte, error) { return []byte("new"), nil })
	x2 := startHost(t, ox).Mesh(childMesh)
	// Until p shows x Ready on a new connection, every observation of the
	// new generation as ready — at p or at x2 — must come after p's
	// liveness counted the old connection lost.
	var cur routemesh.PeerStatus
	var st routemesh.Status
	waitFor(t, "p ready with the new generation", 15*time.Second, func() bool {
		px, _ := status(t, x2).Peer("p") // read first: p's counter is read after it
		st = status(t, p)
		lost := st.Counters["peers_lost"] > lostBefore
		cur, _ = st.Peer("x")
		newReady := px.State == routemesh.PeerReady || (cur.State == routemesh.PeerReady && cur.Pipe != first.Pipe)
		if newReady && !lost {
			t.Fatalf("the new generation is ready (x2 sees %+v, p sees %+v) while p still holds the old connection", px, cur)
		}
		if since := time.Since(frozen); newReady && since < earliestLoss {
			t.Fatalf("the new generation is ready %v after the freeze, before liveness could have lost the old connection (%v)", since, earliestLoss)
		}
		return cur.State == routemesh.PeerReady && cur.Pipe != first.Pipe && px.State == routemesh.PeerReady && px.Pipe == cur.Pipe
	})
	wantReply(t, "new generation", timedRequest(ctxT(t, 5*time.Second), p, "x", "who", nil), []byte("new"))

	// Wake the old generation: it finds p silent, redials with its old
	// generation and may still flush frames on its old socket. None of it
	// may change p's current connection to x.
	rejects, late := st.Counters["handshake_rejects"], st.Counters["late_frames"]
	if err := syscall.Kill(old.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old generation tries again and is refused", 10*time.Second, func() bool {
		c := status(t, p).Counters
		return c["handshake_rejects"] > rejects || c["late_frames"] > late
	})
	holdsFor(t, "p keeps the new generation's connection", 3*fastLiveness.LastHeard, func() bool {
		pp, _ := status(t, p).Peer("x")
		px, _ := status(t, x2).Peer("p")
		return pp.State == routemesh.PeerReady && pp.Pipe == cur.Pipe && px.State == routemesh.PeerReady && px.Pipe == cur.Pipe
	})
	for i := 0; i < 5; i++ {
		wantReply(t, "new generation after the old one woke", timedRequest(ctxT(t, 5*time.Second), p, "x", "who", nil), []byte("new"))
	}
	old.kill(t)
}
