package test

import (
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

type score struct {
	Player string
	Points int
}

var (
	reportScore = wire.NewPacket[score, struct{}]("ReportScore")
	total       = wire.NewPacket[string, int]("Total")
)

// One verb set: Send/Call on a channel, SendNode/CallNode to one node, and
// Multicast — each with a typed form.
func TestTyped_SendNodeAndMulticast(t *testing.T) {
	start := func(rid string, bonus int) (*routemesh.Node, chan score) {
		got := make(chan score, 16)
		o := zlink.NewOptions()
		m := o.AddRouteMesh("typed").SetRoutingID(rid).ConfigureLiveness(fastLiveness)
		routemesh.OnDirectSend(m, reportScore, func(c *routemesh.Context, s score) { got <- s })
		routemesh.OnRequest(m.Channel("board").Server(), total, func(c *routemesh.Context, p string) (int, error) {
			if p == "" {
				return 0, errors.New("no player")
			}
			return len(p) + bonus, nil
		})
		return startHost(t, o).Mesh("typed"), got
	}
	a, gotA := start("a", 10)
	b, _ := start("b", 20)
	oc := zlink.NewOptions()
	oc.AddRouteMesh("typed").SetRoutingID("cli").ConfigureLiveness(fastLiveness).
		AddPeer(a.Endpoint(), "a").AddPeer(b.Endpoint(), "b").Channel("board").Client()
	cli := startHost(t, oc).Mesh("typed")
	waitPeerState(t, cli, "a", routemesh.PeerReady)
	waitPeerState(t, cli, "b", routemesh.PeerReady)

	if err := routemesh.SendNode(ctxT(t, 5*time.Second), cli, "a", reportScore, score{Player: "p1", Points: 7}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-gotA:
		if s != (score{Player: "p1", Points: 7}) {
			t.Fatalf("a received %+v", s)
		}
	case <-ctxT(t, 5*time.Second).Done():
		t.Fatal("the typed Node-direct send never arrived")
	}

	res, err := routemesh.Multicast(ctxT(t, 5*time.Second), cli, "board", total, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].RID != "a" || res[0].Reply != 13 || res[0].Err != nil ||
		res[1].RID != "b" || res[1].Reply != 23 || res[1].Err != nil {
		t.Fatalf("typed multicast = %+v", res)
	}
	res, err = routemesh.Multicast(ctxT(t, 5*time.Second), cli, "board", total, "")
	if err != nil || len(res) != 2 || !errors.Is(res[0].Err, zlink.ErrHandler) || !errors.Is(res[1].Err, zlink.ErrHandler) {
		t.Fatalf("typed multicast with failing handlers = %+v %v", res, err)
	}
}
