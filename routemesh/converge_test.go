package routemesh

import (
	"context"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
)

// A weight update whose push was lost still reaches the peers: every
// heartbeat carries the revision and the Server set, and a larger revision
// of the same generation is applied (without a Location Store).
func TestWeights_LostPushConvergesThroughHeartbeats(t *testing.T) {
	start := func(rid string, peer string) *Node {
		b := NewMeshBuilder("m").Listen("tcp://127.0.0.1:0").SetRoutingID(rid).
			ConfigureLiveness(LivenessConfig{Interval: 20 * time.Millisecond, MaxGap: 50, LastHeard: 2 * time.Second})
		if peer != "" {
			b.AddPeer(peer, "srv").Channel("c").Client()
		} else {
			b.Channel("c").Server().SetWeight(100).HandleRequest("p", func(c *Context, p []byte) ([]byte, error) { return p, nil })
		}
		cfg := b.Config()
		if err := (&Topology{Meshes: []*Config{cfg}}).Validate(); err != nil {
			t.Fatal(err)
		}
		sys := actors.NewSystem(actors.Config{Name: "t-" + rid})
		n, err := Start(context.Background(), cfg, Deps{System: sys})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = n.Stop(context.Background())
			_ = sys.Shutdown(context.Background())
		})
		return n
	}
	srv := start("srv", "")
	cli := start("cli", srv.Endpoint())
	weightSeen := func(w uint16) bool {
		for _, tg := range cli.table.Snapshot().Servers("c") {
			if tg.RID == "srv" && tg.Weight == w {
				return true
			}
		}
		return false
	}
	waitSeen := func(w uint16, what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !weightSeen(w); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	waitSeen(100, "the client never saw the server's initial weight")
	// Change the weight the way applyWeight does, but without the push (as
	// if the WeightUpdate envelope was lost). The view is published with a
	// compare-and-swap, so this write from the test cannot be lost either.
	srv.update(func(v *view) { v.weights, v.revision = map[string]uint16{"c": 7}, v.revision+1 })
	waitSeen(7, "a weight change whose push was lost never converged through heartbeats")
}
