package test

import (
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

type joinReq struct {
	Player string
	Rating int
}

type joinResult struct {
	Match string
	Seat  int
}

var joinMatch = wire.NewPacket[joinReq, joinResult]("JoinMatch")

// whoIs has the same packet name as a channel packet: Node-direct handlers
// live in their own scope, so they never collide.
var whoIs = wire.NewPacket[string, string]("JoinMatch")

func TestTyped_RequestHandlersWithoutBytes(t *testing.T) {
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("srv").ConfigureLiveness(fastLiveness)
	routemesh.OnRequest(m.Channel("match").Server(), joinMatch, func(c *routemesh.Context, r joinReq) (joinResult, error) {
		if r.Rating < 0 {
			return joinResult{}, errors.New("bad rating")
		}
		return joinResult{Match: "m-" + r.Player, Seat: r.Rating % 10}, nil
	})
	routemesh.OnDirectRequest(m, whoIs, func(c *routemesh.Context, s string) (string, error) {
		return "direct:" + s + ":" + c.From, nil
	})
	srv := startHost(t, o).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
	cli := startHost(t, oc).Mesh("game")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)

	res, err := routemesh.Call(ctxT(t, 5*time.Second), cli, "match", joinMatch, joinReq{Player: "p1", Rating: 1234})
	if err != nil || res != (joinResult{Match: "m-p1", Seat: 4}) {
		t.Fatalf("typed call: %+v %v", res, err)
	}
	if _, err := routemesh.Call(ctxT(t, 5*time.Second), cli, "match", joinMatch, joinReq{Rating: -1}); !errors.Is(err, zlink.ErrHandler) || !contains(err.Error(), "bad rating") {
		t.Fatalf("typed handler error: %v", err)
	}
	got, err := routemesh.CallNode(ctxT(t, 5*time.Second), cli, "srv", whoIs, "x")
	if err != nil || got != "direct:x:cli" {
		t.Fatalf("typed direct call with a colliding packet name: %q %v", got, err)
	}
	// A payload of the wrong type ends with ErrBadPayload, reported as a
	// handler-side failure to the caller.
	wrong := wire.NewPacket[string, joinResult]("JoinMatch")
	if _, err := routemesh.Call(ctxT(t, 5*time.Second), cli, "match", wrong, "not a joinReq"); err == nil {
		t.Fatal("a payload of the wrong type must not succeed")
	}
}

func TestMulticast_MemberAtCapacityAnswersBusy(t *testing.T) {
	full := &serverSpec{rid: "full", weight: 100, budget: 1, conc: 1, block: make(chan struct{})}
	ok := &serverSpec{rid: "ok", weight: 100}
	cli := channelMesh(t, "match", []*serverSpec{full, ok}, nil)
	inflight := blockOn(t, cli, full, "match")
	// The first echo that reaches full waits in its one queue slot (its one
	// handler slot is held); after that full refuses, in its own result.
	var res []routemesh.MemberResult
	waitFor(t, "a multicast where full answers ErrBusy", 5*time.Second, func() bool {
		_, _ = cli.Call(ctxT(t, 200*time.Millisecond), "match", "echo", nil)
		r, err := cli.Multicast(ctxT(t, 500*time.Millisecond), "match", "echo", nil)
		if err != nil {
			return false
		}
		res = r
		return len(r) == 2 && errors.Is(r[0].Err, zlink.ErrBusy)
	})
	if res[0].RID != "full" || res[1].RID != "ok" || res[1].Err != nil {
		t.Fatalf("multicast results %+v", res)
	}
	close(full.block)
	if err := <-inflight; err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
