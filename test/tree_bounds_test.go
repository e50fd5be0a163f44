package test

import (
	"context"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/spot/counter"
	"github.com/zlink-go/zlink/supervisor"
)

// Every actor of a running process shows a mailbox bound in the tree (no
// 0/∞): the host, each MeshNode and its listener, lease, discovery,
// channels, owners, peers and their writers, the Spot actors, fanout. The
// actors that take traffic others send — MeshNodes, peers, channel and
// Node-direct owners, Spot kinds (calls waiting for an activation) — have
// a byte budget as well as a message budget.
func TestTree_EveryActorShowsItsBound(t *testing.T) {
	store := memStore(t)
	node := func(prefix string) *zlink.Host {
		o := zlink.NewOptions().SetLocationStore(store)
		b := o.AddRouteMesh("game").SetRoutingIDPrefix(prefix).ConfigureLiveness(fastLiveness).
			ConfigureDiscovery(fastDiscovery).SetObjectRole(routemesh.ObjectServer)
		b.Channel("match").Server().HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
		spot.Enable(b, counter.Kind())
		o.AddFanoutPublisher(fanout.PublisherConfig{Channel: "news-" + prefix, HeartbeatInterval: 50 * time.Millisecond, TTL: time.Second})
		o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news-" + prefix, Automatic: true, Handler: func(fanout.Message) {},
			PollInterval: 20 * time.Millisecond, ReceiveTimeout: 500 * time.Millisecond})
		return startHost(t, o)
	}
	a, b := node("a"), node("b")
	an, bn := a.Mesh("game"), b.Mesh("game")
	waitPeerState(t, an, bn.RID(), routemesh.PeerReady)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := spot.WaitReady(ctx, an); err != nil {
		t.Fatal(err)
	}
	if _, _, err := spot.CallRaw(ctx, an, counter.KindName, "x", "add", []byte("1")); err != nil {
		t.Fatal(err)
	}
	withBytes := map[string]bool{"meshnode": true, "peer": true, "channel": true, "owner": true, "spot-kind": true}
	seen := map[string]bool{}
	var walk func(n supervisor.Node)
	walk = func(n supervisor.Node) {
		if n.Path != supervisor.RootPath {
			seen[n.Kind] = true
			if n.Mailbox.MaxMessages <= 0 {
				t.Errorf("%s (%s) has no message bound", n.Path, n.Kind)
			}
			if withBytes[n.Kind] && n.Mailbox.MaxBytes <= 0 {
				t.Errorf("%s (%s) takes traffic without a byte bound", n.Path, n.Kind)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(a.Tree())
	for _, k := range []string{"host", "meshnode", "listener", "lease", "discovery", "channel", "owner", "peer", "writer", "spot-kind", "members", "publisher", "subscriber"} {
		if !seen[k] {
			t.Errorf("the tree has no %s actor: the test no longer sees every kind (%v)", k, seen)
		}
	}
}
