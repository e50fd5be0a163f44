package test

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(leakOptions(), goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(cliBinDir())
		os.Exit(code)
	}))...)
}

// leakOptions ignores goroutines that zmq4 itself leaks (measured: a
// reader per connection closed with unread messages, the PUB/connection
// reapers) and protoactor's process-wide background workers.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		// zmq4 never stops a PUB socket's writer (measured).
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
		// protoactor's dead-letter throttle: ends by itself one second after the last dead letter.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		// rueidis' cluster client closes replaced connections 5 s after a
		// slot-map refresh, then ends by itself.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	}
}

// testLogger writes through t when ZLINK_TEST_LOG is set, else nowhere.
func testLogger(t *testing.T) zerolog.Logger {
	if os.Getenv("ZLINK_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// fastLiveness makes peer loss visible in well under a second.
var fastLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond}

// steadyLiveness is for tests that assert no connection is ever lost for
// another reason than silence (peers_lost == 0 after a dial race, an
// oversized reply): heartbeats as often, but a silence limit of a second,
// so that a loaded machine's stall cannot end a connection on its own.
var steadyLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 20, LastHeard: time.Second}

// startHost starts one process-like host and stops it at cleanup.
func startHost(t *testing.T, o *zlink.Options) *zlink.Host {
	t.Helper()
	o.SetLogger(testLogger(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { stopHost(t, h) })
	return h
}

func stopHost(t *testing.T, h *zlink.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdsFor checks a negative property over an observation window: cond
// must stay true for all of d (e.g. "no retry happens"). It is not a
// synchronisation wait: nothing waits for it to become true.
func holdsFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			t.Fatalf("%s stopped holding", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// status returns a node's status or fails the test.
func status(t *testing.T, n *routemesh.Node) routemesh.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// waitPeerState waits until node n shows peer rid in state want.
func waitPeerState(t *testing.T, n *routemesh.Node, rid string, want routemesh.PeerState) {
	t.Helper()
	waitFor(t, n.RID()+" sees "+rid+" "+want.String(), 10*time.Second, func() bool {
		p, ok := status(t, n).Peer(rid)
		return ok && p.State == want
	})
}

// freeEndpoint returns a tcp endpoint on a loopback port that was free, for
// a node that must bind a known port (both sides of a pair naming each
// other, a restart on the same endpoint). The port comes from below the
// kernel's ephemeral range (ip_local_port_range, 32768–60999 by default):
// a port taken from inside it can be handed to an outgoing connection's
// source port — e.g. our own dial towards it — before we bind it.
func freeEndpoint(t *testing.T) string {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return "tcp://127.0.0.1:" + strconv.Itoa(port)
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
