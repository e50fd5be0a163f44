package test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/routemesh"
)

// replySink is an actor that hands every *routemesh.Reply it receives to
// a channel (the test reads it); it answers nothing else.
func replySink(t *testing.T, budget int64) (*actors.Ref, chan *routemesh.Reply, func()) {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Name: "async-test", Logger: zerolog.Nop()})
	got := make(chan *routemesh.Reply, 1024)
	gate := make(chan struct{})
	ref, err := sys.Spawn(actors.Spec{Name: "caller", MaxMessages: budget, Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			switch m := c.Message().(type) {
			case *routemesh.Reply:
				got <- m
			case string: // "hold": block until released (fills the mailbox)
				<-gate
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	return ref, got, func() { close(gate) }
}

func asyncPair(t *testing.T) (srv, cli *routemesh.Node, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	os := zlink.NewOptions()
	m := os.AddRouteMesh("async").SetRoutingID("srv").ConfigureLiveness(fastLiveness).
		HandleDirectRequest("echo", echo).
		HandleDirectRequest("fail", func(c *routemesh.Context, p []byte) ([]byte, error) { return nil, errors.New("banned") }).
		// slow ignores its context: only release ends it.
		HandleDirectRequest("slow", func(c *routemesh.Context, p []byte) ([]byte, error) {
			<-release
			return p, nil
		}).SetTimeouts(time.Second, 200*time.Millisecond)
	m.Channel("echo").Server().HandleRequest("echo", echo)
	srv = startHost(t, os).Mesh("async")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("async").SetRoutingID("cli").ConfigureLiveness(fastLiveness).AddPeer(srv.Endpoint(), "srv").Channel("echo").Client()
	cli = startHost(t, oc).Mesh("async")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)
	waitPeerState(t, srv, "cli", routemesh.PeerReady)
	return srv, cli, release
}

func nextReply(t *testing.T, got chan *routemesh.Reply) *routemesh.Reply {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no Reply arrived: an asynchronous call did not end")
		return nil
	}
}

// An actor starts requests without a goroutine waiting per call; each
// one's terminal result arrives in its mailbox exactly once, tagged.
func TestAsync_RepliesArriveInTheCallersMailbox(t *testing.T) {
	_, cli, release := asyncPair(t)
	defer close(release)
	ref, got, _ := replySink(t, 4096)
	const n = 200
	for i := 0; i < n; i++ {
		var err error
		if i%2 == 0 {
			err = cli.CallAsync("echo", "echo", []byte(fmt.Sprint(i)), 5*time.Second, ref.ReplyTo(), i)
		} else {
			err = cli.CallNodeAsync("srv", "echo", []byte(fmt.Sprint(i)), 5*time.Second, ref.ReplyTo(), i)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]bool{}
	for range n {
		r := nextReply(t, got)
		i := r.Tag.(int)
		if seen[i] {
			t.Fatalf("call %d ended twice", i)
		}
		seen[i] = true
		if r.Err != nil || string(r.Payload) != fmt.Sprintf("echo:%d", i) || r.From != "srv" {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("an extra Reply: %+v", r)
	case <-time.After(50 * time.Millisecond): // observation window for a duplicate
	}
}

// Every terminal result reaches the caller as a Reply: an error at once,
// the remote handler's error, a timeout, a lost peer, shutdown.
func TestAsync_EveryTerminalResultArrives(t *testing.T) {
	srv, cli, release := asyncPair(t)
	ref, got, _ := replySink(t, 4096)
	expect := func(tag string, want error) {
		t.Helper()
		r := nextReply(t, got)
		if r.Tag != tag || !errors.Is(r.Err, want) {
			t.Fatalf("%s: Reply %+v, want an error matching %v", tag, r, want)
		}
	}
	_ = cli.CallNodeAsync("nobody", "echo", nil, time.Second, ref.ReplyTo(), "no target")
	expect("no target", zlink.ErrNoTarget)
	_ = cli.CallNodeAsync("srv", "fail", nil, time.Second, ref.ReplyTo(), "handler")
	expect("handler", zlink.ErrHandler)
	start := time.Now()
	_ = cli.CallNodeAsync("srv", "slow", nil, 100*time.Millisecond, ref.ReplyTo(), "timeout")
	expect("timeout", zlink.ErrTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
	_ = cli.CallNodeAsync("srv", "slow", nil, 10*time.Second, ref.ReplyTo(), "peer lost")
	waitFor(t, "the slow call running", 5*time.Second, func() bool { return status(t, srv).Inflight > 0 })
	// The server stops while the handler still runs: the caller learns it
	// (the server answers ErrShuttingDown for what it cannot finish, or the
	// connection goes first: ErrPeerLost, outcome unknown).
	if err := srv.Stop(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	r := nextReply(t, got)
	if r.Tag != "peer lost" || !(errors.Is(r.Err, zlink.ErrPeerLost) || errors.Is(r.Err, zlink.ErrShuttingDown)) {
		t.Fatalf("peer lost: %+v", r)
	}
	close(release)
	waitFor(t, "the client dropping the stopped server", 5*time.Second, func() bool {
		p, ok := status(t, cli).Peer("srv")
		return !ok || p.State != routemesh.PeerReady
	})
	_ = cli.CallNodeAsync("srv", "echo", nil, time.Second, ref.ReplyTo(), "after")
	expect("after", zlink.ErrNoTarget)
	if err := cli.Stop(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = cli.CallAsync("echo", "echo", nil, time.Second, ref.ReplyTo(), "stopped")
	expect("stopped", zlink.ErrShuttingDown)
}

// The reply's slot is reserved up front: a caller whose mailbox is full
// is refused at once and no Reply comes; one that had room always gets
// its Reply, even if its mailbox fills meanwhile.
func TestAsync_ReplySlotReservedUpFront(t *testing.T) {
	_, cli, release := asyncPair(t)
	defer close(release)
	ref, got, unblock := replySink(t, 3)
	if err := ref.Tell("hold"); err != nil { // the actor is busy from here on
		t.Fatal(err)
	}
	if err := cli.CallNodeAsync("srv", "slow", nil, 5*time.Second, ref.ReplyTo(), "reserved"); err != nil {
		t.Fatal(err)
	}
	for ref.Tell("fill") == nil { // fill what is left of the budget
	}
	if err := cli.CallNodeAsync("srv", "echo", nil, time.Second, ref.ReplyTo(), "refused"); !errors.Is(err, zlink.ErrMailboxFull) {
		t.Fatalf("CallNodeAsync into a full mailbox = %v, want ErrMailboxFull", err)
	}
	release <- struct{}{} // the slow handler answers
	unblock()
	if r := nextReply(t, got); r.Tag != "reserved" || r.Err != nil {
		t.Fatalf("the reserved reply: %+v", r)
	}
	select {
	case r := <-got:
		t.Fatalf("a refused call sent a Reply: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
}

// A goroutine fans out with futures and collects every result.
func TestAsync_FuturesFanOut(t *testing.T) {
	_, cli, release := asyncPair(t)
	defer close(release)
	fs := make([]*routemesh.Future, 16)
	for i := range fs {
		fs[i] = cli.CallNodeFuture("srv", "echo", []byte(fmt.Sprint(i)), 5*time.Second)
	}
	for i, f := range fs {
		out, err := f.Wait(ctxT(t, 5*time.Second))
		if err != nil || string(out) != fmt.Sprintf("echo:%d", i) || f.From() != "srv" {
			t.Fatalf("future %d: %q %v", i, out, err)
		}
	}
	f := cli.CallNodeFuture("srv", "slow", nil, 5*time.Second)
	if _, err := f.Wait(ctxT(t, 50*time.Millisecond)); !errors.Is(err, zlink.ErrTimeout) {
		t.Fatalf("Wait past its context = %v, want ErrTimeout", err)
	}
}
