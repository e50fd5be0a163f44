package spot_test

import (
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

type push struct {
	From string
	N    int
}

var (
	kickP     = wire.NewPacket[string, struct{}]("kick")
	goP       = wire.NewPacket[string, struct{}]("go")
	pushP     = wire.NewPacket[push, struct{}]("push")
	pushSpotP = wire.NewPacket[push, struct{}]("push-spot")
	pushedP   = wire.NewPacket[struct{}, []push]("pushed")
)

// A turn — here a timer's, which has no caller — pushes typed one-way
// messages to a Spot, a channel and a node (the room pushing to a
// gateway): each arrives decoded, once.
func TestSends_TypedOneWayFromATurn(t *testing.T) {
	store := location.NewMemory()
	got := make(chan push, 8)
	room := spot.NewKind("pusher", func(string) *struct{} { return &struct{}{} })
	spot.On(room, kickP, func(c *spot.Context, _ *struct{}, gw string) (struct{}, error) {
		return struct{}{}, spot.StartTimerOf(c, "go", time.Millisecond, 0, goP, gw)
	})
	spot.OnSend(room, goP, func(c *spot.Context, _ *struct{}, gw string) {
		if c.Source != spot.SourceTimer {
			t.Errorf("the pushes run in a %q turn, want a timer's", c.Source)
		}
		for _, err := range []error{
			spot.Send(c, c.Node, "sink", "s", pushSpotP, push{From: c.ID, N: 1}),
			routemesh.Send(c, c.Node, "gateway", pushP, push{From: c.ID, N: 2}),
			routemesh.SendNode(c, c.Node, gw, pushP, push{From: c.ID, N: 3}),
		} {
			if err != nil {
				t.Errorf("a typed send from a turn: %v", err)
			}
		}
	})
	sink := spot.NewKind("sink", func(string) *[]push { return &[]push{} })
	spot.OnSend(sink, pushSpotP, func(_ *spot.Context, s *[]push, p push) { *s = append(*s, p) })
	spot.On(sink, pushedP, func(_ *spot.Context, s *[]push, _ struct{}) ([]push, error) { return *s, nil })

	_, srv := startNode(t, store, "os", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{room, sink},
		more: func(b *routemesh.MeshBuilder) { b.Channel("gateway").Client() }})
	_, gw := startNode(t, store, "gw", nodeOpts{role: routemesh.ObjectNone, more: func(b *routemesh.MeshBuilder) {
		routemesh.OnSend(b.Channel("gateway").Server(), pushP, func(_ *routemesh.Context, p push) { got <- p })
		routemesh.OnDirectSend(b, pushP, func(_ *routemesh.Context, p push) { got <- p })
	}})
	waitSpots(t, srv)
	ctx := ctxT(t, 20*time.Second)
	if err := srv.WaitPeers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := spot.Call(ctx, srv, "pusher", "r", kickP, gw.RID()); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for len(seen) < 2 {
		select {
		case p := <-got:
			if p.From != "r" || seen[p.N] {
				t.Fatalf("push %+v (seen %v)", p, seen)
			}
			seen[p.N] = true
		case <-ctx.Done():
			t.Fatalf("the gateway got %v of the channel and node pushes", seen)
		}
	}
	if !seen[2] || !seen[3] {
		t.Fatalf("the gateway got %v, want the channel's (2) and the node's (3)", seen)
	}
	waitFor(t, "the Spot's push", 10*time.Second, func() bool {
		ps, err := spot.Call(ctx, srv, "sink", "s", pushedP, struct{}{})
		return err == nil && len(ps) == 1 && ps[0] == push{From: "r", N: 1}
	})
}
