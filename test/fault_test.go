package test

// Faults with a real peer process: a crash (SIGKILL) and a freeze (SIGSTOP)
// end pending calls with ErrPeerLost at once, take the peer out of Ready,
// and the manual intent reconnects to a restarted peer (new generation, same
// RID) whose requests are then served by the new process only.

import (
	"errors"
	"strconv"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// peerLostBound bounds how long a pending call may take to end after its
// peer crashed; the call's own deadline is 30 s.
const peerLostBound = 5 * time.Second

// dialChild starts a node "a" that dials the child's endpoint (manual intent).
func dialChild(t *testing.T, c *childNode) *routemesh.Node {
	t.Helper()
	_, a := startDirectNode(t, childMesh, "a", func(m *routemesh.MeshBuilder) {
		m.AddPeer(c.endpoint, "child")
	})
	waitPeerState(t, a, "child", routemesh.PeerReady)
	return a
}

// blockOnChild sends a "block" request with a 30 s deadline and waits until
// the child's handler holds it: the call is pending when the fault hits.
func blockOnChild(t *testing.T, a *routemesh.Node, c *childNode) <-chan callOutcome {
	t.Helper()
	ch := goRequest(ctxT(t, 30*time.Second), a, "child", "block", nil)
	c.waitLine(t, "BLOCKED")
	select {
	case o := <-ch:
		t.Fatalf("block request ended before the fault: %v", o.err)
	default:
	}
	return ch
}

func childPid(t *testing.T, a *routemesh.Node) int {
	t.Helper()
	o := timedRequest(ctxT(t, 5*time.Second), a, "child", "pid", nil)
	if o.err != nil {
		t.Fatalf("pid request: %v", o.err)
	}
	pid, err := strconv.Atoi(string(o.out))
	if err != nil {
		t.Fatalf("pid reply %q", o.out)
	}
	return pid
}

func TestFault_CrashFailsPendingAndReconnectsToRestart(t *testing.T) {
	listen := freeEndpoint(t)
	c1 := startChild(t, "child", listen)
	a := dialChild(t, c1)
	if pid := childPid(t, a); pid != c1.pid {
		t.Fatalf("pid %d, want child %d", pid, c1.pid)
	}
	lostBefore := status(t, a).Counters["peers_lost"]
	ch := blockOnChild(t, a, c1)

	killed := time.Now()
	c1.kill(t)
	o := awaitOutcome(t, "pending call after crash", ch, 30*time.Second)
	if !errors.Is(o.err, zlink.ErrPeerLost) {
		t.Fatalf("pending call after crash: %v, want ErrPeerLost", o.err)
	}
	if d := time.Since(killed); d > peerLostBound {
		t.Fatalf("pending call took %v after the crash to end (deadline 30s)", d)
	}
	waitFor(t, "child leaves Ready", 10*time.Second, func() bool {
		p, ok := status(t, a).Peer("child")
		return ok && p.State != routemesh.PeerReady
	})
	// Not a target any more: new calls fail at once.
	wantErrWithin(t, "request to crashed child", timedRequest(ctxT(t, 30*time.Second), a, "child", "echo", nil), zlink.ErrNoTarget, promptBound)
	if lost := status(t, a).Counters["peers_lost"]; lost != lostBefore+1 {
		t.Fatalf("peers_lost counter %d → %d, want one loss", lostBefore, lost)
	}

	// Restart on the same endpoint with the same RID: a new process and
	// generation. The intent reconnects by itself (backoff).
	c2 := startChild(t, "child", c1.endpoint)
	waitPeerState(t, a, "child", routemesh.PeerReady)
	wantReply(t, "echo after restart", timedRequest(ctxT(t, 5*time.Second), a, "child", "echo", []byte("x")), []byte("echo:x"))
	// Requests now reach the new process only; nothing of the old generation
	// answers.
	for i := 0; i < 5; i++ {
		if pid := childPid(t, a); pid != c2.pid {
			t.Fatalf("request %d served by pid %d, want the restarted child %d", i, pid, c2.pid)
		}
	}
}

func TestFault_FrozenPeerLostByLiveness(t *testing.T) {
	c := startChild(t, "child", freeEndpoint(t))
	a := dialChild(t, c)
	wantReply(t, "echo", timedRequest(ctxT(t, 5*time.Second), a, "child", "echo", []byte("x")), []byte("echo:x"))
	ch := blockOnChild(t, a, c)

	frozen := time.Now()
	c.stop(t) // connection stays open; heartbeats stop
	o := awaitOutcome(t, "pending call to frozen peer", ch, 30*time.Second)
	if !errors.Is(o.err, zlink.ErrPeerLost) {
		t.Fatalf("pending call to frozen peer: %v, want ErrPeerLost", o.err)
	}
	// Liveness thresholds: last-heard 400ms / gap 5×50ms; allow scheduling
	// slack, but far below the call's 30 s deadline.
	if d := time.Since(frozen); d > peerLostBound {
		t.Fatalf("frozen peer detected after %v", d)
	}
	waitFor(t, "frozen child leaves Ready", 10*time.Second, func() bool {
		p, ok := status(t, a).Peer("child")
		return ok && p.State != routemesh.PeerReady
	})
	wantErrWithin(t, "request to frozen child", timedRequest(ctxT(t, 30*time.Second), a, "child", "echo", nil), zlink.ErrNoTarget, promptBound)
}
