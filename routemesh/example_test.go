package routemesh_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

type JoinReq struct{ Player string }

type JoinResult struct{ Seat int }

// JoinMatch is a typed packet shared by the caller and the handler.
var JoinMatch = wire.NewPacket[JoinReq, JoinResult]("JoinMatch")

// startPair starts a Server of channel "match" (set up by serve) and a
// Client node that dials it, and returns the client's node and a stop.
func startPair(ctx context.Context, serve func(*routemesh.ServerBuilder)) (*routemesh.Node, func(), error) {
	so := zlink.NewOptions()
	serve(so.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("match-1").Channel("match").Server())
	server, err := zlink.Start(ctx, so)
	if err != nil {
		return nil, nil, err
	}
	co := zlink.NewOptions()
	co.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("lobby-1").
		AddPeer(server.Mesh("game").Endpoint(), "match-1").Channel("match").Client()
	client, err := zlink.Start(ctx, co)
	if err != nil {
		_ = server.Stop(ctx)
		return nil, nil, err
	}
	stop := func() { _ = client.Stop(ctx); _ = server.Stop(ctx) }
	node := client.Mesh("game")
	if err := node.WaitReady(ctx, "match"); err != nil {
		stop()
		return nil, nil, err
	}
	return node, stop, nil
}

// The typed select-one call: the request and the reply are Go values, the
// handler's error comes back once, matchable with errors.Is.
func ExampleCall() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, stop, err := startPair(ctx, func(s *routemesh.ServerBuilder) {
		routemesh.OnRequest(s, JoinMatch, func(c *routemesh.Context, req JoinReq) (JoinResult, error) {
			if req.Player == "banned" {
				return JoinResult{}, errors.New("player banned")
			}
			return JoinResult{Seat: 7}, nil
		})
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	res, err := routemesh.Call(ctx, node, "match", JoinMatch, JoinReq{Player: "p1"})
	fmt.Println(res.Seat, err)
	_, err = routemesh.Call(ctx, node, "match", JoinMatch, JoinReq{Player: "banned"})
	fmt.Println(errors.Is(err, zlink.ErrHandler), err)
	// Output:
	// 7 <nil>
	// true zlink: handler failed: player banned
}

// WaitReady returns once a call on the channel can be placed, so the first
// call does not end with ErrNoTarget; without a Server it ends with ctx.
func ExampleNode_WaitReady() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := zlink.NewOptions()
	o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").Channel("match").Client()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Stop(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer wcancel()
	err = h.Mesh("game").WaitReady(wctx, "match")
	fmt.Println(errors.Is(err, zlink.ErrNoTarget), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}
