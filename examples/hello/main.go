// Command hello starts two MeshNodes of mesh "game" in one process — a
// Server of channel "lobby" and a Client that dials it — waits until the
// channel has a ready target, then makes one channel call and one
// Node-direct call.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// The server: a fixed RID, a Server role on "lobby" and a Node-direct
	// handler. Port 0: the kernel picks a free port.
	so := zlink.NewOptions()
	sm := so.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("lobby-1")
	sm.Channel("lobby").Server().HandleRequest("hello", func(c *routemesh.Context, p []byte) ([]byte, error) {
		return fmt.Appendf(nil, "hello %s, this is %s", p, c.RID), nil
	})
	sm.HandleDirectRequest("ping", func(c *routemesh.Context, _ []byte) ([]byte, error) {
		return []byte("pong from " + c.RID + " to " + c.From), nil
	})
	server, err := zlink.Start(ctx, so)
	if err != nil {
		return err
	}
	defer stop(server)

	// The client: manual topology, one peer (the server's endpoint, whose
	// RID must be lobby-1), a Client role on "lobby".
	co := zlink.NewOptions()
	cm := co.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("gateway-1")
	cm.AddPeer(server.Mesh("game").Endpoint(), "lobby-1")
	cm.Channel("lobby").Client()
	client, err := zlink.Start(ctx, co)
	if err != nil {
		return err
	}
	defer stop(client)
	node := client.Mesh("game")

	// Start returns once the node itself is ready; the connection to the
	// server may still be in its handshake. Wait for it instead of retrying.
	if err := node.WaitReady(ctx, "lobby"); err != nil {
		return err
	}
	reply, err := node.Call(ctx, "lobby", "hello", []byte("player-1"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "channel call: %s\n", reply)
	reply, err = node.CallNode(ctx, "lobby-1", "ping", nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "direct call: %s\n", reply)
	return nil
}

// stop stops a host, bounded (Stop drains nothing here: nothing is in flight).
func stop(h *zlink.Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Stop(ctx)
}
