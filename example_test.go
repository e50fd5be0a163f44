package zlink_test

import (
	"context"
	"fmt"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// Greet is a typed packet: its name and its request and reply types.
var Greet = wire.NewPacket[string, string]("Greet")

// Two MeshNodes of mesh "game" in one process: a Server of channel "lobby"
// and a Client that dials it. Start checks every registration before
// anything binds; WaitReady waits for the connection instead of retrying.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	so := zlink.NewOptions()
	sm := so.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("lobby-1")
	routemesh.OnRequest(sm.Channel("lobby").Server(), Greet, func(c *routemesh.Context, name string) (string, error) {
		return "hello " + name + " from " + c.RID, nil
	})
	server, err := zlink.Start(ctx, so)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Stop(ctx)

	co := zlink.NewOptions()
	co.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("gateway").
		AddPeer(server.Mesh("game").Endpoint(), "lobby-1").
		Channel("lobby").Client()
	client, err := zlink.Start(ctx, co)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Stop(ctx)

	node := client.Mesh("game")
	if err := node.WaitReady(ctx, "lobby"); err != nil {
		fmt.Println(err)
		return
	}
	reply, err := routemesh.Call(ctx, node, "lobby", Greet, "p1")
	fmt.Println(reply, err)
	// Output: hello p1 from lobby-1 <nil>
}
