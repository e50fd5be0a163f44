package spot_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// ask is what the asker kind's turn does: start one asynchronous call of
// Mode ("spot", "channel" or "node") and end the turn at once.
type ask struct {
	Mode, Target, ID, Packet, Tag string
	TimeoutMs                     int64
}

var askP = wire.NewPacket[ask, struct{}]("ask")

type asked struct{ N int }

// askerKind starts the asynchronous call its message names and hands
// every Reply its OnReply gets to got.
func askerKind(got chan<- *spot.Reply) *spot.Kind[asked] {
	k := spot.NewKind("asker", func(string) *asked { return &asked{} })
	replies := k.OnReply(func(_ *spot.Context, s *asked, r *spot.Reply) {
		s.N++
		got <- r
	})
	spot.On(k, askP, func(c *spot.Context, s *asked, a ask) (struct{}, error) {
		timeout := time.Duration(a.TimeoutMs) * time.Millisecond
		var body []byte
		switch {
		case a.Mode != "spot":
		case a.Packet == sleepP.Name():
			body, _ = sleepP.EncodeRequest(-500) // sleeps that long, deadline or not
		default:
			body, _ = getP.EncodeRequest(struct{}{})
		}
		switch a.Mode {
		case "spot":
			return struct{}{}, replies.CallSpot(c, a.Target, a.ID, a.Packet, body, timeout, a.Tag)
		case "channel":
			return struct{}{}, replies.Call(c, a.Target, a.Packet, body, timeout, a.Tag)
		default:
			return struct{}{}, replies.CallNode(c, a.Target, a.Packet, body, timeout, a.Tag)
		}
	})
	return k
}

// A Spot's asynchronous calls — to a Spot, a channel, a node — each end
// with exactly one Reply in a turn of the Spot: the reply, the handler's
// error, no target, the timeout, the peer lost or shutting down.
func TestSpot_AsyncEveryTerminalResultArrives(t *testing.T) {
	store := location.NewMemory()
	got := make(chan *spot.Reply, 64)
	_, a := startNode(t, store, "asker", nodeOpts{role: routemesh.ObjectServer,
		kinds: []spot.Registration{askerKind(got), counterKind(nil, 0)},
		more:  func(b *routemesh.MeshBuilder) { b.Channel("work").Client(); b.Channel("nowhere").Client() }})

	release := make(chan struct{})
	defer close(release)
	fail := func(*routemesh.Context, []byte) ([]byte, error) { return nil, errors.New("refused") }
	slow := func(*routemesh.Context, []byte) ([]byte, error) { <-release; return []byte("late"), nil }
	echo := func(_ *routemesh.Context, p []byte) ([]byte, error) { return append([]byte("echo:"), p...), nil }
	bo := zlink.NewOptions().SetLocationStore(store).SetLogger(logger(t))
	bb := bo.AddRouteMesh(mesh).SetRoutingID("worker").ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
		HandleDirectRequest("slow", slow).
		SetTimeouts(time.Second, 200*time.Millisecond)
	bb.Channel("work").Server().HandleRequest("echo", echo).HandleRequest("fail", fail)
	ctx := ctxT(t, 30*time.Second)
	bh, err := zlink.Start(ctx, bo)
	if err != nil {
		t.Fatal(err)
	}
	b := bh.Mesh(mesh)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop(t, bh)
		}
	})
	waitSpots(t, a, b)
	if _, err := spot.Call(ctx, a, "counter", "c", addP, add{N: 7}); err != nil {
		t.Fatal(err)
	}

	expect := func(a ask, ok func(*spot.Reply) bool) {
		t.Helper()
		r := nextSpotReply(t, got)
		if r.Tag != a.Tag || !ok(r) {
			t.Fatalf("%s: Reply %+v (err %v)", a.Tag, r, r.Err)
		}
	}
	isErr := func(want ...error) func(*spot.Reply) bool {
		return func(r *spot.Reply) bool {
			for _, w := range want {
				if errors.Is(r.Err, w) {
					return true
				}
			}
			return false
		}
	}
	run := func(x ask, ok func(*spot.Reply) bool) {
		t.Helper()
		if _, err := spot.Call(ctx, a, "asker", "q", askP, x); err != nil {
			t.Fatalf("%s: the turn: %v", x.Tag, err)
		}
		expect(x, ok)
	}
	run(ask{Mode: "spot", Target: "counter", ID: "c", Packet: getP.Name(), Tag: "spot reply", TimeoutMs: 2000},
		func(r *spot.Reply) bool {
			v, err := getP.DecodeReply(r.Payload)
			return r.Err == nil && err == nil && v == 7
		})
	run(ask{Mode: "spot", Target: "counter", ID: "c", Packet: boomP.Name(), Tag: "spot handler", TimeoutMs: 2000}, isErr(zlink.ErrHandler))
	run(ask{Mode: "spot", Target: "counter", ID: "c", Packet: sleepP.Name(), Tag: "spot timeout", TimeoutMs: 50}, isErr(zlink.ErrTimeout))
	run(ask{Mode: "spot", Target: "nobody", ID: "c", Packet: getP.Name(), Tag: "spot no kind", TimeoutMs: 2000}, func(r *spot.Reply) bool { return r.Err != nil })
	run(ask{Mode: "channel", Target: "work", Packet: "echo", Tag: "channel reply", TimeoutMs: 2000},
		func(r *spot.Reply) bool { return r.Err == nil && string(r.Payload) == "echo:" && r.From == "worker" })
	run(ask{Mode: "channel", Target: "work", Packet: "fail", Tag: "channel handler", TimeoutMs: 2000}, isErr(zlink.ErrHandler))
	run(ask{Mode: "channel", Target: "nowhere", Packet: "echo", Tag: "channel no target", TimeoutMs: 2000}, isErr(zlink.ErrNoTarget))
	run(ask{Mode: "channel", Target: "unknown", Packet: "echo", Tag: "channel no role", TimeoutMs: 2000}, isErr(routemesh.ErrNoChannelRole))
	run(ask{Mode: "node", Target: "nobody", Packet: "slow", Tag: "node no target", TimeoutMs: 2000}, isErr(zlink.ErrNoTarget))
	run(ask{Mode: "node", Target: "worker", Packet: "slow", Tag: "node timeout", TimeoutMs: 50}, isErr(zlink.ErrTimeout))

	// The worker stops while a call to it runs: the Spot learns it (the
	// worker answers ErrShuttingDown for what it cannot finish, or the
	// connection goes first: ErrPeerLost).
	lost := ask{Mode: "node", Target: "worker", Packet: "slow", Tag: "node peer lost", TimeoutMs: 10_000}
	if _, err := spot.Call(ctx, a, "asker", "q", askP, lost); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slow call running on the worker", 5*time.Second, func() bool {
		st, err := b.Status(ctx)
		return err == nil && st.Inflight > 0
	})
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bh.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	expect(lost, isErr(zlink.ErrPeerLost, zlink.ErrShuttingDown))

	// Each call ended once: nothing more arrives, and the Spot ran one
	// OnReply turn per call.
	select {
	case r := <-got:
		t.Fatalf("an extra Reply: %+v", r)
	case <-time.After(100 * time.Millisecond): // observation window for a duplicate
	}
	if st, _ := spot.StatsOf(a); st.Kinds == nil {
		t.Fatal("no Spot stats")
	}
}

func nextSpotReply(t *testing.T, got chan *spot.Reply) *spot.Reply {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no Reply arrived: an asynchronous call of a Spot did not end")
		return nil
	}
}

// Many asynchronous Spot calls in flight: each ends once, and none needs
// a goroutine of its own while it waits.
func TestSpot_AsyncCallsNeedNoGoroutineEach(t *testing.T) {
	store := location.NewMemory()
	got := make(chan *spot.Reply, 1024)
	entered, hold := make(chan struct{}), make(chan struct{})
	gate := spot.NewKind("gate", func(string) *asked { return &asked{} })
	spot.On(gate, sleepP, func(*spot.Context, *asked, int64) (int64, error) {
		close(entered)
		<-hold
		return 0, nil
	})
	spot.On(gate, getP, func(_ *spot.Context, s *asked, _ struct{}) (int64, error) { s.N++; return int64(s.N), nil })
	gate.SetMailbox(1024, 1<<20)
	_, a := startNode(t, store, "fan", nodeOpts{role: routemesh.ObjectServer,
		kinds: []spot.Registration{askerKind(got), gate}})
	waitSpots(t, a)
	ctx := ctxT(t, 30*time.Second)
	// One turn of the gate holds every later call to it in its mailbox;
	// meanwhile the askers' calls are all in flight.
	held := make(chan error, 1)
	go func() { _, err := spot.Call(ctx, a, "gate", "g", sleepP, 0); held <- err }()
	<-entered
	before := runtime.NumGoroutine()
	const n = 200
	for i := range n {
		x := ask{Mode: "spot", Target: "gate", ID: "g", Packet: getP.Name(), Tag: fmt.Sprint(i), TimeoutMs: 10_000}
		if _, err := spot.Call(ctx, a, "asker", fmt.Sprintf("q%d", i%8), askP, x); err != nil {
			t.Fatal(err)
		}
	}
	if grew := runtime.NumGoroutine() - before; grew > n/4 {
		t.Fatalf("%d goroutines more with %d asynchronous calls in flight", grew, n)
	}
	close(hold)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	seen := map[any]bool{}
	for range n {
		r := nextSpotReply(t, got)
		if seen[r.Tag] || r.Err != nil {
			t.Fatalf("reply %+v: twice or failed (%v)", r, r.Err)
		}
		seen[r.Tag] = true
	}
}

// Asynchronous calls start from what OnReply returned: a kind without a
// reply handler has nothing to start them with, and a turn of another kind
// is refused with ErrConfig before any call is made.
func TestSpot_AsyncRepliesBelongToTheirKind(t *testing.T) {
	other := spot.NewKind("other", func(string) *asked { return &asked{} })
	replies := other.OnReply(func(*spot.Context, *asked, *spot.Reply) {})
	k := spot.NewKind("plain", func(string) *asked { return &asked{} })
	spot.On(k, askP, func(c *spot.Context, s *asked, a ask) (struct{}, error) {
		return struct{}{}, replies.CallNode(c, a.Target, "x", nil, time.Second, nil)
	})
	store := location.NewMemory()
	_, os := startNode(t, store, "os", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{k, other}})
	waitSpots(t, os)
	_, err := spot.Call(ctxT(t, 10*time.Second), os, "plain", "p", askP, ask{Target: os.RID()})
	if !errors.Is(err, spot.ErrHandler) || !strings.Contains(err.Error(), "replies go to kind other") {
		t.Fatalf("a turn of kind plain starting a call with kind other's replies: %v; want its handler's error naming both", err)
	}
}
