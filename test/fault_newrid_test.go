package test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_KillNineServerRestartedWithNewRID: automatic topology on
// Redis; one of two Servers is a separate process, killed with SIGKILL
// under load (no goodbye, its descriptor left to expire) and started
// again under a new RID. Its in-flight calls end with a typed error, the
// other Server carries the load meanwhile, the new RID is discovered and
// taken into selection, and the old one is gone: its descriptor expires
// and the client keeps no peer under it. Every call is accounted for and
// the goroutines come back to their baseline.
func TestFault_KillNineServerRestartedWithNewRID(t *testing.T) {
	srv, store := redisStore(t)
	s1 := autoNode(t, store, "s", func(b *routemesh.MeshBuilder) { b.Channel("echo").Server().HandleRequest("echo", echo) })
	child, old := startFaultAutoServer(t, srv.Addr(), "k")
	c := autoNode(t, store, "c", func(b *routemesh.MeshBuilder) { b.Channel("echo").Client() })
	waitFor(t, "the client knowing both Servers", 15*time.Second, func() bool {
		return clientKnows(t, c, s1.RID()) && clientKnows(t, c, old)
	})
	base := runtime.NumGoroutine()

	load := startLedger(t, c, 4)
	waitFor(t, "both Servers serving", 15*time.Second, func() bool { return load.since(s1.RID()) > 20 && load.since(old) > 20 })
	killed := time.Now()
	child.kill(t)
	waitFor(t, "the client losing the killed Server", 15*time.Second, func() bool { return !clientKnows(t, c, old) })
	lost := time.Since(killed)
	load.mark()
	waitFor(t, "the other Server carrying the load", 15*time.Second, func() bool { return load.since(s1.RID()) > 50 })

	restarted := time.Now()
	_, fresh := startFaultAutoServer(t, srv.Addr(), "k")
	if fresh == old {
		t.Fatalf("the restarted Server took the old RID %s", old)
	}
	waitFor(t, "the new RID taken into selection", 15*time.Second, func() bool { return load.since(fresh) > 20 })
	found := time.Since(restarted)
	waitFor(t, "the old RID gone from the store and the client", 15*time.Second, func() bool {
		_, err := descriptorOf(t, store, old)
		_, listed := status(t, c).Peer(old)
		return errors.Is(err, location.ErrNotFound) && !listed
	})
	gone := time.Since(killed)
	if n := load.since(old); n != 0 {
		t.Fatalf("the killed RID answered %d calls", n)
	}
	load.check(t)
	g := goroutinesBack(t, base)
	t.Logf("killed Server lost after %v, its RID gone from store and client after %v; new RID %s serving %v after its start (old %s); goroutines %d (baseline %d)",
		lost.Round(time.Millisecond), gone.Round(time.Millisecond), fresh, found.Round(time.Millisecond), old, g, base)
}
