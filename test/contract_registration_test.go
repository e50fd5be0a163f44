package test

// Contract tests of the "registration and startup checks" contract items,
// driven through the public builder and Start only.

import (
	"context"
	"errors"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

func startErr(t *testing.T, o *zlink.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err == nil {
		stopHost(t, h)
	}
	return err
}

// wantConfigError asserts a typed configuration refusal naming mesh/channel.
func wantConfigError(t *testing.T, err, sentinel error, mesh, channel string) {
	t.Helper()
	if !errors.Is(err, zlink.ErrConfig) || !errors.Is(err, sentinel) {
		t.Fatalf("Start: %v, want %v (ErrConfig)", err, sentinel)
	}
	var ce *routemesh.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Start: %T is not a *routemesh.ConfigError", err)
	}
	if ce.Mesh != mesh || ce.Channel != channel {
		t.Fatalf("ConfigError names mesh=%q channel=%q, want mesh=%q channel=%q", ce.Mesh, ce.Channel, mesh, channel)
	}
}

func TestContract_Registration_DuplicateMeshNameFails(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game")
	o.AddRouteMesh("game")
	wantConfigError(t, startErr(t, o), routemesh.ErrDuplicateMesh, "game", "")
}

func TestContract_Registration_ChannelOnTwoSendPathsFails(t *testing.T) {
	cases := map[string]func(o *zlink.Options){
		"two RouteMeshes": func(o *zlink.Options) {
			o.AddRouteMesh("m1").Channel("match").Client()
			o.AddRouteMesh("m2").Channel("match").Server()
		},
		"RouteMesh Client and fanout publisher": func(o *zlink.Options) {
			o.AddRouteMesh("m1").Channel("match").Client()
			o.AddFanoutPublisher(fanout.PublisherConfig{Channel: "match"})
		},
		"RouteMesh and fanout": func(o *zlink.Options) {
			o.AddRouteMesh("m1").Channel("match").Server()
			o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "match", Endpoints: []string{"tcp://127.0.0.1:1"}})
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			o := zlink.NewOptions()
			build(o)
			err := startErr(t, o)
			if !errors.Is(err, routemesh.ErrTopologyConflict) {
				t.Fatalf("Start: %v, want ErrTopologyConflict", err)
			}
			var ce *routemesh.ConfigError
			if !errors.As(err, &ce) || ce.Channel != "match" {
				t.Fatalf("error does not name the channel: %v", err)
			}
		})
	}
	t.Run("same name twice on one RouteMesh", func(t *testing.T) {
		o := zlink.NewOptions()
		m := o.AddRouteMesh("m1")
		m.Channel("match").Client()
		m.Channel("match").Server()
		wantConfigError(t, startErr(t, o), routemesh.ErrDuplicateChannel, "m1", "match")
	})
}

func TestContract_Registration_SameRoleTwiceOnARouteMeshFails(t *testing.T) {
	// One role per ChannelName on a RouteMesh, the same role included.
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game")
	m.Channel("match").Client()
	m.Channel("match").Client()
	wantConfigError(t, startErr(t, o), routemesh.ErrDuplicateChannel, "game", "match")
}

func TestContract_Registration_ObjectClientServerChannelButNoDirectHandler(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	o := zlink.NewOptions().SetLocationStore(store)
	o.AddRouteMesh("game").SetRoutingID("oc").SetObjectRole(routemesh.ObjectClient).ConfigureLiveness(fastLiveness).
		Channel("match").Server().SetWeight(100).HandleRequest("echo", echo).Mesh().
		Channel("lobby").Client()
	oc := startHost(t, o).Mesh("game")
	// Its Channel Server role serves channel calls; a Node-direct call to it
	// ends exactly as NoTarget (never substituted, never served).
	oa := zlink.NewOptions()
	oa.AddRouteMesh("game").SetRoutingID("caller").ConfigureLiveness(fastLiveness).
		AddPeer(oc.Endpoint(), "oc").Channel("match").Client()
	caller := startHost(t, oa).Mesh("game")
	waitPeerState(t, caller, "oc", routemesh.PeerReady)
	if out, rid, err := caller.CallFrom(ctxT(t, 5*time.Second), "match", "echo", []byte("x")); err != nil || rid != "oc" || string(out) != "echo:x" {
		t.Fatalf("channel call to the Object Client's Server role: %q from %q, %v", out, rid, err)
	}
	for _, packet := range []string{"echo", "nope"} {
		_, err := caller.CallNode(ctxT(t, 5*time.Second), "oc", packet, nil)
		if !errors.Is(err, zlink.ErrNoTarget) {
			t.Fatalf("Node direct %q to an Object Client: %v, want ErrNoTarget", packet, err)
		}
	}
	if err := caller.SendNode(ctxT(t, 5*time.Second), "oc", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("Node-direct send to an Object Client: %v, want ErrNoTarget", err)
	}
	o = zlink.NewOptions().SetLocationStore(store)
	o.AddRouteMesh("game").SetObjectRole(routemesh.ObjectClient).HandleDirectRequest("echo", echo)
	wantConfigError(t, startErr(t, o), routemesh.ErrDirectOnObjectRole, "game", "")
}

func TestContract_Registration_NoServerMembershipStarts(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").Channel("match").Client()
	if err := startErr(t, o); err != nil {
		t.Fatalf("a node with no Server membership must start: %v", err)
	}
	o = zlink.NewOptions()
	o.AddRouteMesh("game") // no channel at all
	if err := startErr(t, o); err != nil {
		t.Fatalf("a node with no channel must start: %v", err)
	}
}

func TestContract_Registration_WeightRangeAtStartup(t *testing.T) {
	for _, w := range []int{0, 100, 10000} {
		o := zlink.NewOptions()
		o.AddRouteMesh("game").Channel("match").Server().SetWeight(w)
		if err := startErr(t, o); err != nil {
			t.Fatalf("weight %d must be accepted: %v", w, err)
		}
	}
	for _, w := range []int{-1, 10001} {
		o := zlink.NewOptions()
		o.AddRouteMesh("game").Channel("match").Server().SetWeight(w)
		wantConfigError(t, startErr(t, o), routemesh.ErrWeightRange, "game", "match")
	}
}

func TestContract_Registration_RIDAndTopologyModes(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingID("a").SetRoutingIDPrefix("game")
	wantConfigError(t, startErr(t, o), routemesh.ErrRIDConflict, "game", "")

	o = zlink.NewOptions()
	o.AddRouteMesh("game").SetRoutingIDPrefix("game")
	wantConfigError(t, startErr(t, o), routemesh.ErrNeedsLocationStore, "game", "")

	// A manual node without a fixed RID gets a generated one.
	o = zlink.NewOptions()
	o.AddRouteMesh("game")
	h := startHost(t, o)
	if h.Mesh("game").RID() == "" || h.Mesh("game").Generation() == 0 {
		t.Fatalf("generated RID %q generation %d", h.Mesh("game").RID(), h.Mesh("game").Generation())
	}
}

func TestContract_Registration_FanoutAutomaticAndManualFails(t *testing.T) {
	store := location.NewMemory()
	t.Cleanup(func() { _ = store.Close() })
	o := zlink.NewOptions().SetLocationStore(store)
	o.AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Automatic: true, Endpoints: []string{"tcp://127.0.0.1:1"}})
	wantConfigError(t, startErr(t, o), routemesh.ErrFanoutSourceConflict, "", "news")
}
