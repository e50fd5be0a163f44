package routemesh

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
	"github.com/zlink-go/zlink/wire"
)

// A peer that restarts (same RID and endpoint, new generation) is dialed
// again by the node that held an intent to it, and calls reach the new
// incarnation — whether the old one said goodbye (Stop) or vanished
// without a word (crash: nothing it sends arrives any more, and a notices
// by liveness alone).
func TestReconnectMem_AfterPeerRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "graceful"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			nw := memnet.New(4)
			live := LivenessConfig{Interval: 20 * time.Millisecond, MaxGap: 4, LastHeard: 300 * time.Millisecond}
			b1 := startMem(t, nw, memSpec{rid: "b", live: live})
			ep := b1.Endpoint()
			a := startMem(t, nw, memSpec{rid: "a", live: live, peer: ep, expect: "b"})
			waitUntil(t, "a and b ready", 5*time.Second, func() bool { return settled(nw, a, b1) })
			if !a.callOK(t, "b") {
				t.Fatal("call to the first incarnation failed")
			}
			if crash {
				// The host vanishes: nothing more arrives from it, and its
				// connections are not closed; only a's liveness notices.
				nw.Partition("a", "b")
			} else {
				b1.stop()
			}
			waitUntil(t, "a notices b is gone", 5*time.Second, func() bool { return a.linkTo("b") == nil })
			b1.stop()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := a.CallNode(ctx, "b", "echo", nil)
			cancel()
			if !errors.Is(err, wire.ErrNoTarget) {
				t.Fatalf("call while b is down = %v, want ErrNoTarget", err)
			}
			if crash {
				nw.Heal("a", "b")
			}

			b2 := startMem(t, nw, memSpec{rid: "b", live: live, listen: ep})
			if b2.Endpoint() != ep || b2.Generation() == b1.Generation() {
				t.Fatalf("restart: endpoint %s gen %x, was %s gen %x", b2.Endpoint(), b2.Generation(), ep, b1.Generation())
			}
			waitUntil(t, "a reconnects to the new incarnation", 10*time.Second, func() bool {
				l := a.linkTo("b")
				return l != nil && l.gen == b2.Generation() && settled(nw, a, b2)
			})
			if !a.callOK(t, "b") || !b2.callOK(t, "a") {
				t.Fatal("calls fail after the restart")
			}
		})
	}
}
