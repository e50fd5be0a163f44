package test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// A stranger that opens a ZMTP connection to a node and then says nothing,
// says something that is not a Hello, or is refused, loses the
// connection: none can hold one open (a file descriptor, a zmq4 reader)
// for as long as it likes.

// strangerNode is a node with a short receive timeout (the bound of a
// connection that says nothing after its READY).
func strangerNode(t *testing.T) *routemesh.Node {
	t.Helper()
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("b").ConfigureLiveness(fastLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{ReceiveTimeout: 500 * time.Millisecond}).
		HandleDirectRequest("echo", echo)
	return startHost(t, o).Mesh("game")
}

// zmtpMessage is one final ZMTP message frame holding body.
func zmtpMessage(body []byte) []byte {
	if len(body) <= 255 {
		return append([]byte{0x00, byte(len(body))}, body...)
	}
	return append(binary.BigEndian.AppendUint64([]byte{0x02}, uint64(len(body))), body...)
}

// strangerConnect opens a ZMTP connection with identity id and sends what
// follows its READY.
func strangerConnect(t *testing.T, n *routemesh.Node, id string, then ...[]byte) net.Conn {
	t.Helper()
	c := rawDial(t, n.Endpoint())
	for _, b := range append([][]byte{zmtpGreeting(), zmtpReady(id)}, then...) {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// closedByNode reads c until the node closes it (within 10 s) and returns
// what it read.
func closedByNode(t *testing.T, c net.Conn, what string) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection is still open", what)
	}
	return got
}

func TestGuard_StrangerSilentAfterReadyIsDisconnected(t *testing.T) {
	b := strangerNode(t)
	c := strangerConnect(t, b, "mute")
	closedByNode(t, c, "a connection silent after its READY")
	peerWorks(t, b, "a")
}

func TestGuard_StrangerWhoseFirstMessageIsNoHelloIsDisconnected(t *testing.T) {
	b := strangerNode(t)
	c := strangerConnect(t, b, "garbler", zmtpMessage([]byte("GET / HTTP/1.1")))
	closedByNode(t, c, "a connection whose first message is garbage")
	if n := status(t, b).Counters["protocol_errors"]; n == 0 {
		t.Fatal("the garbage was not counted as a protocol error")
	}
	peerWorks(t, b, "a")
}

func TestGuard_RefusedStrangerIsDisconnected(t *testing.T) {
	b := strangerNode(t)
	hello := wire.Hello{Identity: wire.Identity{Mesh: "other", RID: "x", Generation: 1, Revision: 1,
		SecurityIdentity: "none:", Endpoint: "tcp://127.0.0.1:1", Protocol: wire.ProtocolVersion, RecvLimit: 1 << 20}}
	frame, err := wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameHello, Hello: &hello})
	if err != nil {
		t.Fatal(err)
	}
	c := strangerConnect(t, b, "wrong-mesh", zmtpMessage(frame))
	got := closedByNode(t, c, "a refused stranger")
	// What came before the close: the node's greeting and READY, then the
	// Reject that says why.
	if len(got) <= 64 {
		t.Fatalf("the node closed without a Reject (%d bytes)", len(got))
	}
	if n := status(t, b).Counters["handshake_rejects"]; n == 0 {
		t.Fatal("no handshake reject counted")
	}
	peerWorks(t, b, "a")
}
