package spot_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

var (
	viaGateP = wire.NewPacket[string, string]("via-gate")
	askGateP = wire.NewPacket[string, struct{}]("ask-gate") // an async call whose reply no request waits for
	countP   = wire.NewPacket[struct{}, int]("count")
	gateP    = wire.NewPacket[string, string]("gate")
)

type moverState struct{ N int }

// gateKinds: a persistent Spot kind whose request is answered, deferred,
// by the reply of a gate Spot that answers only when release closes.
// entered gets a value each time the gate's handler starts.
func gateKinds(release <-chan struct{}, entered chan<- string) []spot.Registration {
	mover := spot.NewKind("mover", func(string) *moverState { return &moverState{} })
	ask := spot.OnReplyOf(mover, gateP, func(c *spot.Context, s *moverState, resp string, err error, tag any) {
		l, deferred := tag.(*spot.Later[string])
		if !deferred { // askGate's reply: counted in the state
			if err == nil {
				s.N++
			}
			return
		}
		if err != nil {
			_ = l.Fail(c, err)
			return
		}
		s.N++
		_ = l.Reply(c, "via gate:"+resp)
	})
	spot.On(mover, viaGateP, func(c *spot.Context, _ *moverState, tag string) (string, error) {
		l, err := spot.Defer(c, viaGateP)
		if err != nil {
			return "", err
		}
		return "", ask.CallSpot(c, "gate", "g", tag, 30*time.Second, l)
	})
	spot.OnSend(mover, askGateP, func(c *spot.Context, _ *moverState, tag string) {
		_ = ask.CallSpot(c, "gate", "g", tag, 30*time.Second, nil)
	})
	spot.On(mover, countP, func(_ *spot.Context, s *moverState, _ struct{}) (int, error) { return s.N, nil })
	gate := spot.NewKind("gate", func(string) *struct{} { return &struct{}{} })
	spot.On(gate, gateP, func(_ *spot.Context, _ *struct{}, tag string) (string, error) {
		entered <- tag
		select {
		case <-release:
			return tag, nil
		case <-time.After(30 * time.Second):
			return "", fmt.Errorf("gate never released")
		}
	})
	return []spot.Registration{mover.Persist(spot.Persistence{Version: 1}), gate}
}

// moverNodes starts two Object Servers hosting the gate kinds and a
// client; it returns the server that owns mover/m after the first call
// started (the call is left open), the other one, the client, and the
// call's outcome.
func moverOpen(t *testing.T, ctx context.Context, release chan struct{}) (owner, other *routemesh.Node, got chan error, reply *string) {
	t.Helper()
	store := location.NewMemory()
	entered := make(chan string, 4)
	var servers []*routemesh.Node
	for i := range 2 {
		_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: gateKinds(release, entered)})
		servers = append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	got, reply = make(chan error, 1), new(string)
	go func() {
		var err error
		*reply, err = spot.Call(ctx, cl, "mover", "m", viaGateP, "x")
		got <- err
	}()
	select {
	case <-entered: // the mover's request is open, waiting for the gate
	case <-ctx.Done():
		t.Fatal("the gate was never asked")
	}
	info, err := spot.Owner(ctx, cl, "mover", "m")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		if s.RID() == info.RID {
			return s, servers[1-i], got, reply
		}
	}
	t.Fatalf("mover/m is owned by %s, not a server", info.RID)
	return nil, nil, nil, nil
}

// A move waits for the requests its Spot left open: the answer a later
// turn gives (here the reply of another Spot) reaches the caller, then
// the Spot moves.
func TestDeferred_MoveWaitsForOpenRequests(t *testing.T) {
	ctx := ctxT(t, 40*time.Second)
	release := make(chan struct{})
	owner, other, got, reply := moverOpen(t, ctx, release)
	moved := make(chan error, 1)
	go func() { moved <- spot.Move(ctx, owner, "mover", "m", other.RID()) }()
	waitFor(t, "the move waiting for the open request", 20*time.Second, func() bool {
		st, _ := spot.StatsOf(owner)
		return st.MoveWaits == 1
	})
	close(release)
	if err := <-got; err != nil || *reply != "via gate:x" {
		t.Fatalf("the open request across a move: %q, %v", *reply, err)
	}
	if err := <-moved; err != nil {
		t.Fatalf("move: %v", err)
	}
	info, err := spot.Owner(ctx, other, "mover", "m")
	if err != nil || info.RID != other.RID() {
		t.Fatalf("after the move mover/m is on %s (%v), want %s", info.RID, err, other.RID())
	}
}

// A move waits for open requests at most half of what is left of its own
// deadline; what is still open then ends with ErrOutcomeUnknown (the
// handler ran, its answer never came) and the Spot moves.
func TestDeferred_MoveEndsWhatStaysOpen(t *testing.T) {
	ctx := ctxT(t, 40*time.Second)
	release := make(chan struct{})
	defer close(release)
	owner, other, got, _ := moverOpen(t, ctx, release)
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := spot.Move(short, owner, "mover", "m", other.RID()); err != nil {
		t.Fatalf("move: %v", err)
	}
	if err := <-got; !errors.Is(err, spot.ErrOutcomeUnknown) {
		t.Fatalf("a request still open when the move went on: %v, want ErrOutcomeUnknown", err)
	}
	if st, _ := spot.StatsOf(owner); st.MoveWaits != 1 {
		t.Fatalf("move_waits %d, want 1", st.MoveWaits)
	}
}

// A move waits for the replies its Spot is owed too: the reply of an
// asynchronous call started before the move is taken as a turn on the
// old owner (its change saved and carried), not dropped.
func TestDeferred_MoveWaitsForOwedReplies(t *testing.T) {
	ctx := ctxT(t, 40*time.Second)
	release := make(chan struct{})
	store := location.NewMemory()
	entered := make(chan string, 4)
	var servers []*routemesh.Node
	for i := range 2 {
		_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: gateKinds(release, entered)})
		servers = append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	if err := spot.Send(ctx, cl, "mover", "m", askGateP, "y"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the gate was never asked")
	}
	info, err := spot.Owner(ctx, cl, "mover", "m")
	if err != nil {
		t.Fatal(err)
	}
	owner, other := servers[0], servers[1]
	if info.RID == other.RID() {
		owner, other = other, owner
	}
	moved := make(chan error, 1)
	go func() { moved <- spot.Move(ctx, owner, "mover", "m", other.RID()) }()
	waitFor(t, "the move waiting for the owed reply", 20*time.Second, func() bool {
		st, _ := spot.StatsOf(owner)
		return st.MoveWaits == 1
	})
	close(release)
	if err := <-moved; err != nil {
		t.Fatalf("move: %v", err)
	}
	if n, err := spot.Call(ctx, cl, "mover", "m", countP, struct{}{}); err != nil || n != 1 {
		t.Fatalf("after the move the Spot counts %d replies (%v), want 1: the owed reply was dropped", n, err)
	}
	if st, _ := spot.StatsOf(owner); st.AsyncAbandoned != 0 {
		t.Fatalf("async_abandoned %d, want 0", st.AsyncAbandoned)
	}
}
