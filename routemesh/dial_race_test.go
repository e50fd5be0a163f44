package routemesh

import (
	"context"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/test/fault"
)

func testNode(t *testing.T, rid string) *Node {
	t.Helper()
	b := NewMeshBuilder("m").Listen("tcp://127.0.0.1:0").SetRoutingID(rid)
	b.Channel("c").Server().HandleRequest("p", func(c *Context, p []byte) ([]byte, error) { return p, nil })
	cfg := b.Config()
	if err := (&Topology{Meshes: []*Config{cfg}}).Validate(); err != nil {
		t.Fatal(err)
	}
	sys := actors.NewSystem(actors.Config{Name: "t-" + rid})
	n, err := Start(context.Background(), cfg, Deps{System: sys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	return n
}

// A discovery intent withdrawn while its dial is in flight must not leave a
// pipe behind that nobody stops (Stop used to wait for its writer forever),
// and the dialed socket must be handed over without a data race.
func TestDiscovery_IntentWithdrawnDuringDialLeavesNothingBehind(t *testing.T) {
	a := testNode(t, "a")
	b := testNode(t, "b")
	ctx := context.Background()
	// The dial goes through a proxy that holds every byte for a while, so
	// it is still in flight when discovery withdraws the intent, however
	// fast or slow this machine is.
	proxy, err := fault.New(b.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxy.Delay(150 * time.Millisecond)
	d := location.Descriptor{Mesh: "m", RID: b.RID(), Generation: b.Generation(), Revision: 1, Endpoint: proxy.Endpoint(),
		SecurityIdentity: b.trust.SecurityIdentity(), Servers: map[string]uint16{"c": 100}}
	if _, err := a.mesh().Request(ctx, &discChange{c: change{kind: wantDial, d: d}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.mesh().Request(ctx, &discChange{c: change{kind: wantRemove, d: location.Descriptor{RID: b.RID()}}}); err != nil {
		t.Fatal(err)
	}
	// Let the dial finish (its handshake takes a few proxy delays) so its
	// result reaches the mesh actor after the withdrawal.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		if _, err := a.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := a.Status(ctx); len(st.Peers) != 0 {
		t.Fatalf("a withdrawn intent left peers behind: %+v", st.Peers)
	}
	_ = b.Stop(ctx)
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		done <- a.Stop(sctx)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return: a pipe of the withdrawn dial is still running")
	}
}
