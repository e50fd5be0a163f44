package test

// The four zmq4 hazards (measured; see internal/zguard), checked against a whole MeshNode:
// none of them may hurt the node or its other peers.

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// zmtpGreeting is a ZMTP 3.0 NULL greeting of a client.
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 0
	copy(g[12:], "NULL")
	return g
}

// zmtpReady is a READY command frame of a DEALER with identity id.
func zmtpReady(id string) []byte {
	prop := func(name, value string) []byte {
		b := []byte{byte(len(name))}
		b = append(b, name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
		return append(b, value...)
	}
	body := append([]byte("\x05READY"), prop("Socket-Type", "DEALER")...)
	body = append(body, prop("Identity", id)...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

func rawDial(t *testing.T, endpoint string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(endpoint, "tcp://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// peerWorks connects a fresh node to b and makes a request.
func peerWorks(t *testing.T, b *routemesh.Node, rid string) {
	t.Helper()
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID(rid).ConfigureLiveness(fastLiveness).AddPeer(b.Endpoint(), "b")
	a := startHost(t, o).Mesh("game")
	waitPeerState(t, a, "b", routemesh.PeerReady)
	if out, err := a.CallNode(ctxT(t, 5*time.Second), "b", "echo", []byte("x")); err != nil || string(out) != "echo:x" {
		t.Fatalf("%s → b: %q %v", rid, out, err)
	}
}

func TestGuard_SilentConnectionStallsNoPeer(t *testing.T) {
	o := zlink.NewOptions()
	// A long handshake deadline: the connection that stops after its
	// greeting is still open while the real peer connects and works.
	o.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(fastLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{ReceiveTimeout: 30 * time.Second}).HandleDirectRequest("echo", echo)
	b := startHost(t, o).Mesh("game")
	silent := rawDial(t, b.Endpoint())
	if _, err := silent.Write(zmtpGreeting()); err != nil {
		t.Fatal(err)
	}
	peerWorks(t, b, "a")
	_ = silent.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := silent.Read(make([]byte, 1)); err == io.EOF {
		t.Fatal("the silent connection was closed early; the test proves nothing")
	}
}

func TestGuard_ForgedHugeFrameHeaderKillsNothing(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(fastLiveness).HandleDirectRequest("echo", echo)
	b := startHost(t, o).Mesh("game")
	c := rawDial(t, b.Endpoint())
	if _, err := c.Write(zmtpGreeting()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(zmtpReady("forger")); err != nil {
		t.Fatal(err)
	}
	// A message frame announcing 1 TiB.
	hdr := binary.BigEndian.AppendUint64([]byte{0x02}, 1<<40)
	if _, err := c.Write(hdr); err != nil {
		t.Fatal(err)
	}
	// The node closes that connection (before allocating) ...
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the connection announcing a 1 TiB frame is still open")
		}
	}
	// ... and keeps serving everyone else.
	peerWorks(t, b, "a")
}

func TestGuard_DuplicateIdentityDeliversOnce(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(fastLiveness).HandleDirectRequest("echo", echo)
	b := startHost(t, o).Mesh("game")
	peerWorks(t, b, "a")
	// A second connection claiming the identity of a live pipe is refused.
	pipe := ""
	for _, p := range status(t, b).Peers {
		if p.RID == "a" {
			pipe = p.Pipe
		}
	}
	if pipe == "" {
		t.Fatal("no pipe for a")
	}
	c := rawDial(t, b.Endpoint())
	_, _ = c.Write(zmtpGreeting())
	_, _ = c.Write(zmtpReady(pipe))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection duplicating a live pipe identity stayed open")
	}
	// The real pipe still works, and each request is handled once.
	if st, _ := status(t, b).Peer("a"); st.State != routemesh.PeerReady || st.Pipe != pipe {
		t.Fatalf("a's pipe changed: %+v", st)
	}
}
