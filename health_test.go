package zlink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

func TestEvaluateHealth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const grace = 10 * time.Second
	peer := func(rid string, st routemesh.PeerState, ago time.Duration) routemesh.PeerStatus {
		return routemesh.PeerStatus{RID: rid, State: st, Since: now.Add(-ago), Endpoint: "tcp://127.0.0.1:1", LastError: "connection refused"}
	}
	ready := func(peers ...routemesh.PeerStatus) meshHealth {
		return meshHealth{Mesh: "game", State: routemesh.NodeReady, Peers: peers}
	}
	tests := []struct {
		name        string
		meshes      []meshHealth
		fanouts     []fanoutHealth
		live, ready bool
		reasons     []string // substrings, one per reason, in order
	}{
		{name: "no meshes", live: true, ready: true},
		{name: "ready with ready peers", meshes: []meshHealth{ready(peer("b", routemesh.PeerReady, time.Hour), peer("c", routemesh.PeerDraining, 0))}, live: true, ready: true},
		{name: "starting", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStarting}}, live: true, reasons: []string{"mesh game: starting"}},
		{name: "draining", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeDraining}}, live: true, reasons: []string{"mesh game: draining"}},
		{name: "stopping", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStopping}}, live: true, reasons: []string{"mesh game: stopping"}},
		{name: "stopped", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeStopped}}, live: true, reasons: []string{"mesh game: stopped"}},
		{name: "failed", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeFailed}}, reasons: []string{"mesh game: failed"}},
		{name: "one failed of two", meshes: []meshHealth{ready(), {Mesh: "lobby", State: routemesh.NodeFailed}}, reasons: []string{"mesh lobby: failed"}},
		{name: "status unavailable", meshes: []meshHealth{{Mesh: "game", State: routemesh.NodeReady, StatusErr: errors.New("timeout")}}, live: true, reasons: []string{"mesh game: no status: timeout"}},
		{name: "NotConnected within grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace-time.Millisecond))}, live: true, ready: true},
		{name: "NotConnected exactly at grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace))}, live: true, ready: true},
		{name: "NotConnected past grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, grace+time.Second))}, live: true,
			reasons: []string{"mesh game: peer b (tcp://127.0.0.1:1) NotConnected for 11s (grace 10s): connection refused"}},
		{name: "NotRequired ignored however old", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotRequired, 24*time.Hour))}, live: true, ready: true},
		{name: "Connecting ignored", meshes: []meshHealth{ready(peer("b", routemesh.PeerConnecting, time.Hour))}, live: true, ready: true},
		{name: "two peers past grace", meshes: []meshHealth{ready(peer("b", routemesh.PeerNotConnected, time.Minute), peer("c", routemesh.PeerNotRequired, time.Minute), peer("d", routemesh.PeerNotConnected, time.Minute))},
			live: true, reasons: []string{"peer b", "peer d"}},
		{name: "fanout failed", meshes: []meshHealth{ready()}, fanouts: []fanoutHealth{{Channel: "news", Role: "publisher", Err: errors.New("rebind: address in use")}},
			reasons: []string{"fanout news publisher: failed: rebind: address in use"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := evaluateHealth(now, grace, tc.meshes, tc.fanouts)
			if h.Live != tc.live || h.Ready != tc.ready {
				t.Fatalf("live=%v ready=%v, want live=%v ready=%v; reasons %q", h.Live, h.Ready, tc.live, tc.ready, h.Reasons)
			}
			if h.Reasons == nil || len(h.Reasons) != len(tc.reasons) {
				t.Fatalf("reasons %q, want %d like %q", h.Reasons, len(tc.reasons), tc.reasons)
			}
			for i, want := range tc.reasons {
				if !strings.Contains(h.Reasons[i], want) {
					t.Fatalf("reason %d = %q, want it to contain %q", i, h.Reasons[i], want)
				}
			}
			if !h.Live && h.Ready {
				t.Fatal("ready while not live")
			}
		})
	}
}

func TestHealthConfig_Defaults(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
	}{{0, DefaultPeerGrace}, {-1, 0}, {time.Second, time.Second}} {
		if got := (HealthConfig{PeerGrace: tc.in}).withDefaults().PeerGrace; got != tc.want {
			t.Fatalf("PeerGrace %v → %v, want %v", tc.in, got, tc.want)
		}
	}
	if !slices.Equal(evaluateHealth(time.Now(), 0, nil, nil).Reasons, []string{}) {
		t.Fatal("reasons must be an empty list, not null")
	}
}

// A Host with a mesh and a fanout channel: healthy, and the fanout actors
// are real, running actors in the tree.
func TestHost_HealthAndFanoutActors(t *testing.T) {
	defer goleak.VerifyNone(t,
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := NewOptions()
	o.AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingID("h1")
	o.AddFanoutPublisher(fanout.PublisherConfig{Channel: "news"})
	h, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	o2 := NewOptions().AddFanoutSubscriber(fanout.SubscriberConfig{Channel: "news", Endpoints: []string{h.Publisher("news").Endpoint()}})
	h2, err := Start(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h2.Stop(ctx) }()
	for _, hh := range []*Host{h, h2} {
		if hl := hh.Health(ctx, HealthConfig{}); !hl.Live || !hl.Ready || len(hl.Reasons) != 0 {
			t.Fatalf("health %+v", hl)
		}
	}
	for hh, role := range map[*Host]string{h: "publisher", h2: "subscriber"} {
		n, ok := findPath(hh.Tree(), "/host/fanout:news/"+role)
		if !ok || n.Kind != role || n.State != supervisor.Running {
			t.Fatalf("%s in the tree: %v %+v", role, ok, n)
		}
	}
}

func findPath(n supervisor.Node, path string) (supervisor.Node, bool) {
	if n.Path == path {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := findPath(c, path); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}
