package routemesh

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
)

// Helpers for the protocol tests that run MeshNodes on the in-memory
// network (memnet) instead of ZeroMQ sockets: real actors, real machines,
// a transport the test can cut, drop, delay and reorder.

// memSpec is one node on a memnet network.
type memSpec struct {
	host      string // memnet host name (what faults refer to); default rid
	rid       string
	listen    string // default tcp://127.0.0.1:0 (memnet picks a port)
	peer      string // endpoint to dial, "" = none
	expect    string // the peer's expected RID
	live      LivenessConfig
	hsTimeout time.Duration // handshake timeout (ReceiveTimeout); default 300 ms
}

// memNode is a started node with its own actor system.
type memNode struct {
	*Node
	stop func() // stops the node and its actor system; idempotent
}

func testLog(t *testing.T) zerolog.Logger {
	if os.Getenv("ZLINK_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
}

func echo(_ *Context, p []byte) ([]byte, error) { return p, nil }

// hold answers when its context ends (the caller's deadline, or Stop).
func hold(c *Context, _ []byte) ([]byte, error) {
	<-c.Done()
	return nil, c.Err()
}

// startMem starts a node whose transport is nw.Host(s.host). Every node
// answers the Node-direct requests "echo" and "hold".
func startMem(t *testing.T, nw *memnet.Network, s memSpec) *memNode {
	t.Helper()
	if s.host == "" {
		s.host = s.rid
	}
	if s.listen == "" {
		s.listen = "tcp://127.0.0.1:0"
	}
	if s.hsTimeout == 0 {
		s.hsTimeout = 300 * time.Millisecond
	}
	b := NewMeshBuilder("m").Listen(s.listen).SetRoutingID(s.rid).SetLogger(testLog(t)).
		ConfigureLiveness(s.live).ConfigureRouterSocket(SocketConfig{ReceiveTimeout: s.hsTimeout}).
		SetTimeouts(0, 2*time.Second).HandleDirectRequest("echo", echo).HandleDirectRequest("hold", hold)
	if s.peer != "" {
		b.AddPeer(s.peer, s.expect)
	}
	cfg := b.Config()
	if err := (&Topology{Meshes: []*Config{cfg}}).Validate(); err != nil {
		t.Fatal(err)
	}
	sys := actors.NewSystem(actors.Config{Name: "t-" + s.rid})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg, Deps{System: sys, transport: nw.Host(s.host)})
	if err != nil {
		_ = sys.Shutdown(context.Background())
		t.Fatalf("start %s: %v", s.rid, err)
	}
	var once sync.Once
	mn := &memNode{Node: n, stop: func() {
		once.Do(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			if err := n.Stop(sctx); err != nil {
				t.Errorf("stop %s: %v", s.rid, err)
			}
			_ = sys.Shutdown(sctx)
		})
	}}
	t.Cleanup(mn.stop)
	return mn
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// linkTo is n's ready link to rid, or nil.
func (n *memNode) linkTo(rid string) *link { return n.load().links[rid] }

// callOK reports whether a Node-direct echo to rid succeeds now (and logs
// why not).
func (n *memNode) callOK(t *testing.T, rid string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := n.CallNode(ctx, rid, "echo", []byte("ping"))
	if err != nil || string(out) != "ping" {
		t.Logf("%s → %s: echo = %q, %v", n.rid, rid, out, err)
		return false
	}
	return true
}

// handshaking counts n's inbound pipes that are not ready.
func (n *memNode) handshaking() int {
	c := 0
	n.inbnd.Range(func(_, v any) bool {
		if v.(*pipe).getState() != pipeReady {
			c++
		}
		return true
	})
	return c
}

// settled reports whether a (dialer) and b (listener) hold exactly one
// connection, ready on both sides, with no other pipe left in a handshake
// and a's intent ready.
func settled(nw *memnet.Network, a, b *memNode) bool {
	la, lb := a.linkTo(b.rid), b.linkTo(a.rid)
	if la == nil || lb == nil || la.p.id != lb.p.id {
		return false
	}
	if nw.Conns(a.rid, b.rid) != 1 || a.handshaking() != 0 || b.handshaking() != 0 {
		return false
	}
	st, err := a.Status(context.Background())
	if err != nil {
		return false
	}
	ps, ok := st.Peer(b.rid)
	return ok && ps.State == PeerReady
}
