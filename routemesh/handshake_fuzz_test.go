package routemesh

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// FuzzHandshakeBodies plays a stranger that connects to a node's mesh port
// over real ZeroMQ and sends two arbitrary frames where the handshake
// expects a Hello and then an Auth. Whatever the bytes, the node ends the
// attempt with a typed refusal (a Reject frame with a known reason, or a
// protocol error or handshake refusal counted), never admits the stranger
// (it cannot prove the shared secret), and keeps serving its real peer.
// The seeds run in plain go test; run longer with
// go test -run '^$' -fuzz '^FuzzHandshakeBodies$' -fuzztime 60s ./routemesh/
func FuzzHandshakeBodies(f *testing.F) {
	secret := TrustConfig{Secret: []byte("fuzz-mesh-secret")}
	srv := startStatusNode(f, "srv", func(b *MeshBuilder) {
		b.SetTrust(secret).HandleDirectRequest("echo", func(_ *Context, p []byte) ([]byte, error) { return p, nil })
	})
	cli := startStatusNode(f, "cli", func(b *MeshBuilder) { b.SetTrust(secret).AddPeer(srv.Endpoint(), "srv") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitPeers(ctx, 1); err != nil {
		f.Fatal(err)
	}

	link := func(st Status) bool { p, ok := st.Peer("cli"); return ok && p.State == PeerReady }
	cliPipe, _ := waitStatus(f, srv, link).Peer("cli")
	for _, s := range handshakeSeeds(f, srv) {
		f.Add(s[0], s[1])
	}
	tr := transport.NewZMQ(context.Background(), transport.ZMQConfig{Guard: zguard.DefaultConfig(), DialTimeout: 5 * time.Second})
	var seq atomic.Uint64
	f.Fuzz(func(t *testing.T, first, second []byte) {
		id := fmt.Sprintf("fz-%d", seq.Add(1))
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := tr.Dial(dctx, srv.Endpoint(), id)
		dcancel()
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		replies := make(chan []byte, 8)
		go func() {
			defer close(replies)
			for {
				b, err := conn.Recv()
				if err != nil {
					return
				}
				replies <- b
			}
		}()
		if outcome(t, srv, conn, first, replies) == wire.FrameWelcome {
			if got := outcome(t, srv, conn, second, replies); got == wire.FrameWelcome {
				t.Fatal("a second Welcome")
			}
		}
		// The stranger was never admitted, the real peer kept its link, and
		// it is still served.
		for _, p := range waitStatus(t, srv, func(Status) bool { return true }).Peers {
			if p.RID != "cli" && (p.State == PeerReady || p.State == PeerDraining) {
				t.Fatalf("stranger admitted: %+v", p)
			}
			if p.RID == "cli" && (p.State != PeerReady || p.Pipe != cliPipe.Pipe) {
				t.Fatalf("the real peer's link changed: %+v, was %+v", p, cliPipe)
			}
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if got, err := cli.CallNode(cctx, "srv", "echo", []byte("still")); err != nil || string(got) != "still" {
			t.Fatalf("the real peer's call after %q / %q: %q, %v", first, second, got, err)
		}
	})
}

// refusals is the node's count of refused handshakes and protocol errors.
func refusals(st Status) uint64 {
	return st.Counters["handshake_rejects"] + st.Counters["protocol_errors"]
}

// outcome sends frame and waits (10 s at most) for the node's answer: a
// Welcome (returned), a typed Reject, or a refusal counted. Anything else
// fails the test.
func outcome(t *testing.T, n *Node, conn transport.Conn, frame []byte, replies <-chan []byte) wire.FrameType {
	t.Helper()
	before := refusals(waitStatus(t, n, func(Status) bool { return true }))
	if err := conn.Send(frame); err != nil {
		return 0 // the node already closed the connection: nothing more to say
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case b, ok := <-replies:
			if !ok {
				return 0 // closed by the node
			}
			f, err := wire.DecodeFrame(b)
			switch {
			case err != nil:
				t.Fatalf("the node sent an undecodable frame: %v", err)
			case f.Type == wire.FrameWelcome:
				return f.Type
			case f.Type == wire.FrameReject:
				if strings.HasPrefix(f.Reject.Reason.String(), "reject(") {
					t.Fatalf("reject with an unknown reason %v", f.Reject.Reason)
				}
				return f.Type
			default:
				t.Fatalf("the node answered a stranger with %v", f.Type)
			}
		case <-time.After(10 * time.Millisecond):
			st, err := n.Status(context.Background())
			if err == nil && refusals(st) > before {
				return 0
			}
		}
	}
	t.Fatalf("no refusal of %q within 10 s", frame)
	return 0
}

// handshakeSeeds are frame pairs around the handshake: valid Hellos
// followed by bad Auths or garbage, frames of the wrong type, truncated and
// oversized encodings.
func handshakeSeeds(tb testing.TB, srv *Node) [][2][]byte {
	enc := func(f *wire.Frame) []byte {
		b, err := wire.AppendFrame(nil, f)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	hello := func(mutate func(*wire.Hello)) []byte {
		h := &wire.Hello{Identity: wire.Identity{Mesh: srv.Mesh(), RID: "stranger", Generation: 1, Revision: 1,
			SecurityIdentity: srv.SecurityIdentity(), Endpoint: "tcp://127.0.0.1:1", Protocol: wire.ProtocolVersion,
			Capabilities: requiredCaps, RecvLimit: 1 << 20}, Nonce: [16]byte{1}}
		if mutate != nil {
			mutate(h)
		}
		return enc(&wire.Frame{Type: wire.FrameHello, Hello: h})
	}
	good := hello(nil)
	auth := enc(&wire.Frame{Type: wire.FrameAuth, Auth: &wire.Auth{}})
	reject := enc(&wire.Frame{Type: wire.FrameReject, Reject: &wire.Reject{Reason: wire.RejectAuth, Detail: "x"}})
	welcome := enc(&wire.Frame{Type: wire.FrameWelcome, Welcome: &wire.Welcome{Identity: wire.Identity{Mesh: srv.Mesh(), RID: "w",
		Generation: 1, Revision: 1, SecurityIdentity: "none:anonymous", Protocol: wire.ProtocolVersion}}})
	return [][2][]byte{
		{good, auth},               // a zero proof
		{good, {0x00}},             // garbage where the Auth goes
		{good, good},               // a second Hello
		{good, reject},             // the stranger gives up
		{good, good[:len(good)/2]}, // a truncated frame
		{hello(func(h *wire.Hello) { h.RID = "cli" }), auth},         // claims the real peer's RID
		{hello(func(h *wire.Hello) { h.Mesh = "other" }), nil},       // another mesh
		{hello(func(h *wire.Hello) { h.ExpectRID = "nobody" }), nil}, // expects another node
		{hello(func(h *wire.Hello) { h.SecurityIdentity = "none:anonymous" }), auth},
		{hello(func(h *wire.Hello) { h.Protocol = 999 }), nil},
		{hello(func(h *wire.Hello) { h.Capabilities = nil }), nil},
		{good[:len(good)-1], nil},
		{welcome, nil},
		{auth, nil},
		{reject, nil},
		{{}, nil},
		{{0x93, 0x01, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}, nil}, // a Hello claiming 2^32-1 fields
		{[]byte("GET / HTTP/1.1\r\n\r\n"), nil},
	}
}
