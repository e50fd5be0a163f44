package test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func echo(c *routemesh.Context, p []byte) ([]byte, error) {
	return append([]byte(c.Packet+":"), p...), nil
}

// twoNodes starts a listener node b and a node a that dials it (manual).
func twoNodes(t *testing.T, mesh string) (a, b *routemesh.Node) {
	t.Helper()
	ob := zlink.NewOptions()
	ob.AddRouteMesh(mesh).SetRoutingID("b").ConfigureLiveness(fastLiveness).
		HandleDirectRequest("echo", echo)
	hb := startHost(t, ob)
	b = hb.Mesh(mesh)

	oa := zlink.NewOptions()
	oa.AddRouteMesh(mesh).SetRoutingID("a").ConfigureLiveness(fastLiveness).
		AddPeer(b.Endpoint(), "b").HandleDirectRequest("echo", echo)
	ha := startHost(t, oa)
	a = ha.Mesh(mesh)
	waitPeerState(t, a, "b", routemesh.PeerReady)
	waitPeerState(t, b, "a", routemesh.PeerReady)
	return a, b
}

func TestDirect_RequestBothWays(t *testing.T) {
	a, b := twoNodes(t, "game")
	out, err := a.CallNode(ctxT(t, 5*time.Second), "b", "echo", []byte("hi"))
	if err != nil || !bytes.Equal(out, []byte("echo:hi")) {
		t.Fatalf("a→b: %q %v", out, err)
	}
	out, err = b.CallNode(ctxT(t, 5*time.Second), "a", "echo", []byte("yo"))
	if err != nil || !bytes.Equal(out, []byte("echo:yo")) {
		t.Fatalf("b→a: %q %v", out, err)
	}
	// Self: same path, same result.
	out, err = a.CallNode(ctxT(t, 5*time.Second), "a", "echo", []byte("me"))
	if err != nil || !bytes.Equal(out, []byte("echo:me")) {
		t.Fatalf("a→a: %q %v", out, err)
	}
	if _, err := a.CallNode(ctxT(t, 5*time.Second), "nobody", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("unknown rid: %v, want ErrNoTarget", err)
	}
	if _, err := a.CallNode(ctxT(t, 5*time.Second), "b", "nope", nil); !errors.Is(err, zlink.ErrHandler) && !errors.Is(err, errUnknownPacket) {
		t.Fatalf("unknown packet: %v", err)
	}
}

// A reply larger than the caller's stated receive limit ends that call with
// ErrTooLarge at the replying side; the connection and every other call on
// it are unaffected.
func TestDirect_OversizedReplyIsRefusedNotSent(t *testing.T) {
	ob := zlink.NewOptions()
	ob.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(steadyLiveness).
		HandleDirectRequest("big", func(*routemesh.Context, []byte) ([]byte, error) { return make([]byte, 1<<20), nil }).
		HandleDirectRequest("echo", echo)
	b := startHost(t, ob).Mesh("game")
	oa := zlink.NewOptions()
	oa.AddRouteMesh("game").SetRoutingID("a").ConfigureLiveness(steadyLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{MailboxByteBudget: 64 << 10}).AddPeer(b.Endpoint(), "b")
	a := startHost(t, oa).Mesh("game")
	waitPeerState(t, a, "b", routemesh.PeerReady)
	before, _ := status(t, a).Peer("b")
	if _, err := a.CallNode(ctxT(t, 5*time.Second), "b", "big", nil); !errors.Is(err, zlink.ErrTooLarge) {
		t.Fatalf("1 MiB reply to a 64 KiB receiver: %v, want ErrTooLarge", err)
	}
	if out, err := a.CallNode(ctxT(t, 5*time.Second), "b", "echo", []byte("x")); err != nil || string(out) != "echo:x" {
		t.Fatalf("the next call: %q %v", out, err)
	}
	st := status(t, a)
	if after, _ := st.Peer("b"); after.Pipe != before.Pipe || st.Counters["peers_lost"] != 0 {
		t.Fatalf("the connection was lost over an oversized reply: pipe %s → %s, peers_lost=%d", before.Pipe, after.Pipe, st.Counters["peers_lost"])
	}
}
