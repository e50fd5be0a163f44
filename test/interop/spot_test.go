package interop

import (
	"context"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// add adds N to a counter Spot and returns the new value.
var add = wire.NewPacket[int64, int64]("add")

type counter struct{ N int64 }

// A wire-only peer (no Location Store, no placement) calls a Spot: a
// Node-direct request of packet zlink.spot with the CallVia flag to a
// known Object Server, which places and runs the call and answers.
func TestInterop_SpotViaObjectServer(t *testing.T) {
	needPython(t)
	k := spot.NewKind("counter", func(string) *counter { return &counter{} })
	spot.On(k, add, func(_ *spot.Context, s *counter, n int64) (int64, error) { s.N += n; return s.N, nil })
	o := zlink.NewOptions().SetLocationStore(location.NewMemory()).SetLogger(testLogger(t))
	b := o.AddRouteMesh("spots").SetRoutingIDPrefix("os").SetObjectRole(routemesh.ObjectServer)
	spot.Enable(b, k)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	n := h.Mesh("spots")
	p := startPeer(t, "spot", map[string]any{"endpoint": n.Endpoint(), "mesh": "spots", "kind": "counter", "id": "c1"})
	expectLines(t, p.wait(time.Minute), "ok spot counter/c1 = 5")
}
