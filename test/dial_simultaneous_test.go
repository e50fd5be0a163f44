package test

// Two manual nodes that name each other dial at the same instant: the
// duplicate pipe is refused before either side declares it ready, so no
// ready connection is ever torn down and no call sees ErrPeerLost.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// gate is a TCP forwarder in front of a node's listener. It accepts dials at
// once but holds their bytes until the shared release channel is closed, so
// two nodes' dials, each through its own gate, finish their ZeroMQ greeting
// and send their Hello at the same instant. Connections accepted after the
// release are forwarded at once.
type gate struct {
	ln      net.Listener
	release <-chan struct{}
	target  atomic.Pointer[string] // host:port of the node behind the gate
	held    atomic.Int32           // connections accepted so far
	mu      sync.Mutex
	conns   []net.Conn
	closed  bool
	wg      sync.WaitGroup
}

func newGate(t *testing.T, release <-chan struct{}) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, release: release}
	g.wg.Add(1)
	go g.accept()
	t.Cleanup(g.close)
	return g
}

// endpoint is what peers dial instead of the node's own endpoint.
func (g *gate) endpoint() string { return "tcp://" + g.ln.Addr().String() }

// forwardTo sets the node behind the gate (its tcp:// endpoint).
func (g *gate) forwardTo(endpoint string) {
	hp := strings.TrimPrefix(endpoint, "tcp://")
	g.target.Store(&hp)
}

func (g *gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		_ = c.Close()
		return false
	}
	g.conns = append(g.conns, c)
	return true
}

func (g *gate) accept() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		if !g.track(c) {
			return
		}
		g.held.Add(1)
		g.wg.Add(1)
		go g.forward(c)
	}
}

func (g *gate) forward(c net.Conn) {
	defer g.wg.Done()
	defer c.Close()
	<-g.release
	target := g.target.Load()
	if target == nil {
		return
	}
	up, err := net.Dial("tcp", *target)
	if err != nil || !g.track(up) {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done // one direction ended: end both
	_ = c.Close()
	_ = up.Close()
	<-done
}

func (g *gate) close() {
	_ = g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// simultaneousPair starts nodes "a" and "b" of mesh "game", each with the
// other as its manual peer, with both dials released at the same instant.
// Both answer node-direct "echo" (b with echoB when it is not nil). Both
// hosts stop at the end of t.
func simultaneousPair(t *testing.T, echoB routemesh.RequestHandler) (a, b *routemesh.Node) {
	t.Helper()
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	gA, gB := newGate(t, release), newGate(t, release)
	oa := zlink.NewOptions()
	oa.AddRouteMesh("game").SetRoutingID("a").ConfigureLiveness(steadyLiveness).
		AddPeer(gB.endpoint(), "b").HandleDirectRequest("echo", echo)
	if echoB == nil {
		echoB = echo
	}
	ob := zlink.NewOptions()
	ob.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(steadyLiveness).
		AddPeer(gA.endpoint(), "a").HandleDirectRequest("echo", echoB)
	hosts := make([]*zlink.Host, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, o := range []*zlink.Options{oa, ob} {
		o.SetLogger(testLogger(t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hosts[i], errs[i] = zlink.Start(ctx, o)
		}()
	}
	close(start)
	wg.Wait()
	for i, h := range hosts {
		if h != nil {
			t.Cleanup(func() { stopHost(t, h) })
		}
		if errs[i] != nil {
			t.Fatalf("start host %d: %v", i, errs[i])
		}
	}
	a, b = hosts[0].Mesh("game"), hosts[1].Mesh("game")
	gA.forwardTo(a.Endpoint())
	gB.forwardTo(b.Endpoint())
	// Both dials are connected and held: release them together.
	waitFor(t, "both dials held at their gates", 10*time.Second, func() bool {
		return gA.held.Load() >= 1 && gB.held.Load() >= 1
	})
	released = true
	close(release)
	return a, b
}

// caller calls node-direct "echo" from one node to the other in a loop.
// Before the first reply only ErrNoTarget (no connection yet) is tolerated;
// from the first reply on every call must end with its reply.
type caller struct {
	from     *routemesh.Node
	to       string
	replies  atomic.Int64
	failures chan error
}

func (c *caller) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		msg := []byte(c.from.RID() + "-" + strconv.Itoa(i))
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := c.from.CallNode(cctx, c.to, "echo", msg)
		cancel()
		switch {
		case err == nil && bytes.Equal(got, append([]byte("echo:"), msg...)):
			c.replies.Add(1)
		case err == nil:
			c.fail(fmt.Errorf("call %d: reply %q", i, got))
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, zlink.ErrNoTarget) && c.replies.Load() == 0:
			time.Sleep(time.Millisecond) // not connected yet: poll
		default:
			c.fail(fmt.Errorf("call %d after %d replies: %w", i, c.replies.Load(), err))
			return
		}
	}
}

func (c *caller) fail(err error) {
	select {
	case c.failures <- err:
	default:
	}
}

// oneReadyPipe reports whether both nodes hold exactly one ready connection,
// to each other, on the same pipe.
func oneReadyPipe(t *testing.T, a, b *routemesh.Node) bool {
	sa, sb := status(t, a), status(t, b)
	pa, okA := sa.Peer("b")
	pb, okB := sb.Peer("a")
	return okA && okB && sa.CountPeers(routemesh.PeerReady) == 1 && sb.CountPeers(routemesh.PeerReady) == 1 &&
		pa.State == routemesh.PeerReady && pb.State == routemesh.PeerReady && pa.Pipe != "" && pa.Pipe == pb.Pipe
}

// Every repetition must keep one ready connection and lose no call. Whether
// a repetition's two dials really overlap at the arbiter is up to the
// scheduler (one side may finish its handshake before the other's Hello
// arrives, and then withdraws its own dial), so the race itself is required
// of the run as a whole: at least one repetition must have refused a
// duplicate pipe, or the test never exercised what it is about.
func TestDial_SimultaneousManualDialNeverLosesAReadyConnection(t *testing.T) {
	const reps = 50
	raced := 0
	for rep := range reps {
		if !t.Run("rep="+strconv.Itoa(rep), func(t *testing.T) {
			if simultaneousDialOnce(t) {
				raced++
			}
		}) {
			return
		}
	}
	if raced == 0 {
		t.Fatalf("no duplicate pipe was refused in %d repetitions: the dials never raced", reps)
	}
	t.Logf("the dials raced in %d of %d repetitions", raced, reps)
}

// simultaneousDialOnce runs one repetition and reports whether the arbiter
// (the smaller RID, a) refused one of two racing pipes.
func simultaneousDialOnce(t *testing.T) bool {
	a, b := simultaneousPair(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	failures := make(chan error, 2)
	callers := []*caller{{from: a, to: "b", failures: failures}, {from: b, to: "a", failures: failures}}
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Add(1)
		go func() { defer wg.Done(); c.run(ctx) }()
	}
	stopCalls := func() { cancel(); wg.Wait() }
	defer stopCalls()

	waitFor(t, "one ready connection on both sides", 10*time.Second, func() bool {
		select {
		case err := <-failures:
			t.Fatal(err)
		default:
		}
		return oneReadyPipe(t, a, b)
	})
	// Keep calling right after the connection settled.
	for _, c := range callers {
		base := c.replies.Load()
		waitFor(t, c.from.RID()+" gets replies after settling", 10*time.Second, func() bool {
			select {
			case err := <-failures:
				t.Fatal(err)
			default:
			}
			return c.replies.Load() >= base+20
		})
	}
	stopCalls()
	select {
	case err := <-failures:
		t.Fatal(err)
	default:
	}
	if !oneReadyPipe(t, a, b) {
		t.Fatalf("not one ready connection: a %+v, b %+v", status(t, a).Peers, status(t, b).Peers)
	}
	for _, n := range []*routemesh.Node{a, b} {
		if lost := status(t, n).Counters["peers_lost"]; lost != 0 {
			t.Fatalf("%s: peers_lost = %d, want 0", n.RID(), lost)
		}
	}
	return status(t, a).Counters["handshake_rejects"] > 0
}
