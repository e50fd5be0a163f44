package test

// Terminal results of Node-direct calls: every Request ends
// with exactly one result, matchable with errors.Is, and promptly — never at
// some long default timeout.

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// promptBound bounds how long a call that must end "at once" may take. It is a
// bound on a wait (far below routemesh.DefaultRequestTimeout and the callers'
// own deadlines), not a performance threshold.
const promptBound = 3 * time.Second

// blockGate is a handler that blocks until the test releases it. entered gets
// one value per invocation; release is closed at cleanup at the latest, before
// the hosts stop (cleanups run last-in first-out).
type blockGate struct {
	entered chan string
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64
}

func newBlockGate() *blockGate {
	g := &blockGate{entered: make(chan string, 64), release: make(chan struct{})}
	return g
}

// open releases every blocked and future invocation. Idempotent.
func (g *blockGate) open() { g.once.Do(func() { close(g.release) }) }

// closeAtCleanup registers open; call it after the hosts have been started so
// it runs before they stop.
func (g *blockGate) closeAtCleanup(t *testing.T) { t.Cleanup(g.open) }

func (g *blockGate) request(c *routemesh.Context, p []byte) ([]byte, error) {
	g.calls.Add(1)
	g.entered <- string(p)
	<-g.release
	return p, nil
}

func (g *blockGate) send(c *routemesh.Context, p []byte) {
	g.calls.Add(1)
	g.entered <- string(p)
	<-g.release
}

// waitEntered waits for one invocation of the gate handler.
func (g *blockGate) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case p := <-g.entered:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the blocking handler to start")
		return ""
	}
}

// startDirectNode starts a host with one MeshNode rid on mesh, configured by setup
// (handlers, budgets, timeouts), dialing peers (manual intents by RID).
func startDirectNode(t *testing.T, mesh, rid string, setup func(*routemesh.MeshBuilder), peers ...*routemesh.Node) (*zlink.Host, *routemesh.Node) {
	t.Helper()
	o := zlink.NewOptions()
	b := o.AddRouteMesh(mesh).SetRoutingID(rid).ConfigureLiveness(fastLiveness)
	for _, p := range peers {
		b.AddPeer(p.Endpoint(), p.RID())
	}
	if setup != nil {
		setup(b)
	}
	h := startHost(t, o)
	n := h.Mesh(mesh)
	for _, p := range peers {
		waitPeerState(t, n, p.RID(), routemesh.PeerReady)
		waitPeerState(t, p, n.RID(), routemesh.PeerReady)
	}
	return h, n
}

// callOutcome is one call's terminal result and how long it took.
type callOutcome struct {
	out  []byte
	err  error
	took time.Duration
}

// timedRequest runs n.Request and measures it.
func timedRequest(ctx context.Context, n *routemesh.Node, rid, packet string, payload []byte) callOutcome {
	start := time.Now()
	out, err := n.CallNode(ctx, rid, packet, payload)
	return callOutcome{out: out, err: err, took: time.Since(start)}
}

// goRequest runs a request on its own goroutine; the result arrives on the
// returned channel (buffered, so the goroutine never leaks on a failed test).
func goRequest(ctx context.Context, n *routemesh.Node, rid, packet string, payload []byte) <-chan callOutcome {
	ch := make(chan callOutcome, 1)
	go func() { ch <- timedRequest(ctx, n, rid, packet, payload) }()
	return ch
}

// awaitOutcome waits for an outcome with a deadline.
func awaitOutcome(t *testing.T, what string, ch <-chan callOutcome, d time.Duration) callOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(d):
		t.Fatalf("%s: no terminal result within %v", what, d)
		return callOutcome{}
	}
}

// wantErrWithin asserts the outcome is err (errors.Is) and ended within bound.
func wantErrWithin(t *testing.T, what string, o callOutcome, err error, bound time.Duration) {
	t.Helper()
	if !errors.Is(o.err, err) {
		t.Fatalf("%s: got (%q, %v), want %v", what, o.out, o.err, err)
	}
	if o.took > bound {
		t.Fatalf("%s: %v took %v, want it to end within %v", what, err, o.took, bound)
	}
}

func wantReply(t *testing.T, what string, o callOutcome, want []byte) {
	t.Helper()
	if o.err != nil || !bytes.Equal(o.out, want) {
		t.Fatalf("%s: got (%q, %v), want %q", what, o.out, o.err, want)
	}
}

func TestDirectTerminal_ReplyBothWaysAndSelf(t *testing.T) {
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) })
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) }, b)

	wantReply(t, "a→b", timedRequest(ctxT(t, 5*time.Second), a, "b", "echo", []byte("hi")), []byte("echo:hi"))
	wantReply(t, "b→a", timedRequest(ctxT(t, 5*time.Second), b, "a", "echo", []byte("yo")), []byte("echo:yo"))
	wantReply(t, "a→a", timedRequest(ctxT(t, 5*time.Second), a, "a", "echo", []byte("me")), []byte("echo:me"))
	wantReply(t, "b→b", timedRequest(ctxT(t, 5*time.Second), b, "b", "echo", []byte("bb")), []byte("echo:bb"))

	// The handler sees who called.
	var from atomic.Value
	_, c := startDirectNode(t, "game", "c", func(m *routemesh.MeshBuilder) {
		m.HandleDirectRequest("who", func(ctx *routemesh.Context, _ []byte) ([]byte, error) {
			from.Store(ctx.From)
			return []byte(ctx.From), nil
		})
	}, a)
	wantReply(t, "c→c who", timedRequest(ctxT(t, 5*time.Second), c, "c", "who", nil), []byte("c"))
	wantReply(t, "a→c who", timedRequest(ctxT(t, 5*time.Second), a, "c", "who", nil), []byte("a"))
}

func TestDirectTerminal_HandlerErrorCarriesMessage(t *testing.T) {
	setup := func(m *routemesh.MeshBuilder) {
		m.HandleDirectRequest("echo", echo).
			HandleDirectRequest("fail", func(*routemesh.Context, []byte) ([]byte, error) {
				return nil, errors.New("boom")
			}).
			HandleDirectRequest("panic", func(*routemesh.Context, []byte) ([]byte, error) {
				panic("kaboom")
			})
	}
	_, b := startDirectNode(t, "game", "b", setup)
	_, a := startDirectNode(t, "game", "a", setup, b)

	for _, rid := range []string{"b", "a"} { // remote, then self
		o := timedRequest(ctxT(t, 5*time.Second), a, rid, "fail", nil)
		wantErrWithin(t, "a→"+rid+" fail", o, zlink.ErrHandler, promptBound)
		if !bytes.Contains([]byte(o.err.Error()), []byte("boom")) {
			t.Fatalf("a→%s fail: %q does not carry the handler's message", rid, o.err)
		}
		for i := 0; i < 3; i++ {
			o = timedRequest(ctxT(t, 5*time.Second), a, rid, "panic", nil)
			wantErrWithin(t, "a→"+rid+" panic", o, zlink.ErrHandler, promptBound)
			// The node keeps serving after a panic.
			wantReply(t, "a→"+rid+" echo after panic", timedRequest(ctxT(t, 5*time.Second), a, rid, "echo", []byte("ok")), []byte("echo:ok"))
		}
	}
}

func TestDirectTerminal_TimeoutWhenHandlerBlocks(t *testing.T) {
	g := newBlockGate()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("block", g.request) })
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("block", g.request) }, b)
	g.closeAtCleanup(t)

	// Remote. The timeout is the caller's deadline: never earlier.
	ctx := ctxT(t, 300*time.Millisecond)
	deadline, _ := ctx.Deadline()
	o := timedRequest(ctx, a, "b", "block", []byte("r"))
	wantErrWithin(t, "a→b block", o, zlink.ErrTimeout, promptBound)
	if early := time.Until(deadline); early > 0 {
		t.Fatalf("a→b block: ErrTimeout %v before the caller's deadline", early)
	}
	g.waitEntered(t)
	// Self.
	o = timedRequest(ctxT(t, 300*time.Millisecond), a, "a", "block", []byte("s"))
	wantErrWithin(t, "a→a block", o, zlink.ErrTimeout, promptBound)
	g.waitEntered(t)
}

func TestDirectTerminal_CancelledMidCall(t *testing.T) {
	g := newBlockGate()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("block", g.request) })
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("block", g.request) }, b)
	g.closeAtCleanup(t)

	for _, rid := range []string{"b", "a"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ch := goRequest(ctx, a, rid, "block", nil)
		g.waitEntered(t) // the call is in the handler: mid-call
		cancelled := time.Now()
		cancel()
		o := awaitOutcome(t, "a→"+rid+" cancelled", ch, 10*time.Second)
		if !errors.Is(o.err, zlink.ErrCancelled) || errors.Is(o.err, zlink.ErrTimeout) {
			t.Fatalf("a→%s cancelled: %v, want ErrCancelled", rid, o.err)
		}
		if d := time.Since(cancelled); d > promptBound {
			t.Fatalf("a→%s: cancel took %v to end the call", rid, d)
		}
	}
	// Already-cancelled context: ErrCancelled without submitting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := g.calls.Load()
	wantErrWithin(t, "pre-cancelled", timedRequest(ctx, a, "b", "block", nil), zlink.ErrCancelled, promptBound)
	if g.calls.Load() != before {
		t.Fatal("a request with a cancelled context reached the handler")
	}
}

// fireUntilBusy keeps firing blocking requests from caller to rid (each on
// its own goroutine, each with a long deadline) until one ends with ErrBusy
// while the handler is still blocked. It returns the outcomes still pending.
func fireUntilBusy(t *testing.T, caller *routemesh.Node, rid string, g *blockGate) []<-chan callOutcome {
	t.Helper()
	var pending []<-chan callOutcome
	ctx := ctxT(t, 30*time.Second)
	first := goRequest(ctx, caller, rid, "block", []byte("0"))
	pending = append(pending, first)
	g.waitEntered(t) // the owner is busy in the handler from here on
	for i := 1; i <= 20; i++ {
		ch := goRequest(ctx, caller, rid, "block", []byte(strconv.Itoa(i)))
		select {
		case o := <-ch:
			// Ended while the handler is blocked: it must be the admission
			// refusal, and fast (not a timeout).
			wantErrWithin(t, caller.RID()+"→"+rid+" into a full mailbox", o, zlink.ErrBusy, promptBound)
			return pending
		case <-time.After(200 * time.Millisecond):
			// Admitted into the mailbox (or still on its way): keep it and
			// fire the next one.
			pending = append(pending, ch)
		}
	}
	t.Fatalf("%s→%s: no ErrBusy after 20 requests into a mailbox of budget 1", caller.RID(), rid)
	return nil
}

func TestDirectTerminal_BusyWhenOwnerMailboxFull(t *testing.T) {
	setup := func(g *blockGate) func(*routemesh.MeshBuilder) {
		return func(m *routemesh.MeshBuilder) {
			// One handler at a time, so a blocked handler leaves the
			// mailbox to fill.
			m.SetHandlerConcurrency(1).
				ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: 1}).
				HandleDirectRequest("block", g.request).HandleDirectSend("note", g.send)
		}
	}
	gb, ga := newBlockGate(), newBlockGate()
	_, b := startDirectNode(t, "game", "b", setup(gb))
	_, a := startDirectNode(t, "game", "a", setup(ga), b)
	gb.closeAtCleanup(t)
	ga.closeAtCleanup(t)

	t.Run("remote", func(t *testing.T) {
		pending := fireUntilBusy(t, a, "b", gb)
		gb.open()
		for _, ch := range pending {
			o := awaitOutcome(t, "admitted request", ch, 10*time.Second)
			if o.err != nil && !errors.Is(o.err, zlink.ErrBusy) {
				t.Fatalf("admitted request ended with %v", o.err)
			}
		}
	})
	t.Run("self", func(t *testing.T) {
		// A full local mailbox yields the same result as a full remote one.
		pending := fireUntilBusy(t, a, "a", ga)
		// A local one-way Send into the full mailbox is refused the same way.
		start := time.Now()
		err := a.SendNode(ctxT(t, 5*time.Second), "a", "note", []byte("s"))
		if !errors.Is(err, zlink.ErrBusy) || time.Since(start) > promptBound {
			t.Fatalf("self Send into a full mailbox: %v after %v, want ErrBusy at once", err, time.Since(start))
		}
		ga.open()
		for _, ch := range pending {
			o := awaitOutcome(t, "admitted request", ch, 10*time.Second)
			if o.err != nil && !errors.Is(o.err, zlink.ErrBusy) {
				t.Fatalf("admitted request ended with %v", o.err)
			}
		}
		// Once drained, the node serves again.
		wantReply(t, "a→a after drain", timedRequest(ctxT(t, 5*time.Second), a, "a", "block", []byte("x")), []byte("x"))
	})
}

func TestDirectTerminal_TooLarge(t *testing.T) {
	var small, big atomic.Int64
	lenOf := func(n *atomic.Int64) routemesh.RequestHandler {
		return func(_ *routemesh.Context, p []byte) ([]byte, error) {
			n.Add(1)
			return []byte(strconv.Itoa(len(p))), nil
		}
	}
	// Default liveness: a 4 MiB message under -race on a loaded machine can
	// hold a connection's heartbeats up longer than the tests' fast
	// silence limits, and this test is about sizes, not silence.
	live := routemesh.DefaultLivenessConfig()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) {
		m.ConfigureLiveness(live).ConfigureRouterSocket(routemesh.SocketConfig{MailboxByteBudget: 1 << 20}).HandleDirectRequest("len", lenOf(&small))
	})
	// a has no size setting at all.
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) {
		m.ConfigureLiveness(live).HandleDirectRequest("len", lenOf(&big))
	}, b)

	for _, rid := range []string{"b"} {
		o := timedRequest(ctxT(t, 10*time.Second), a, rid, "len", make([]byte, 2<<20))
		wantErrWithin(t, "2 MiB a→"+rid, o, zlink.ErrTooLarge, promptBound)
	}
	o := timedRequest(ctxT(t, 10*time.Second), b, "b", "len", make([]byte, 2<<20))
	wantErrWithin(t, "2 MiB b→b (self)", o, zlink.ErrTooLarge, promptBound)
	if n := small.Load(); n != 0 {
		t.Fatalf("b's handler ran %d times for refused oversized requests", n)
	}
	// The connection survives the refusal: a 512 KiB request succeeds.
	wantReply(t, "512 KiB a→b", timedRequest(ctxT(t, 10*time.Second), a, "b", "len", make([]byte, 512<<10)), []byte(strconv.Itoa(512<<10)))
	if n := small.Load(); n != 1 {
		t.Fatalf("b's handler ran %d times, want 1", n)
	}
	// Normal messages without a size setting: a default node takes 4 MiB.
	wantReply(t, "4 MiB b→a", timedRequest(ctxT(t, 10*time.Second), b, "a", "len", make([]byte, 4<<20)), []byte(strconv.Itoa(4<<20)))
	wantReply(t, "4 MiB a→a", timedRequest(ctxT(t, 10*time.Second), a, "a", "len", make([]byte, 4<<20)), []byte(strconv.Itoa(4<<20)))
	if n := big.Load(); n != 2 {
		t.Fatalf("a's handler ran %d times, want 2", n)
	}
	// A one-way Send over the limit is refused locally too.
	if err := a.SendNode(ctxT(t, 5*time.Second), "b", "len", make([]byte, 2<<20)); !errors.Is(err, zlink.ErrTooLarge) {
		t.Fatalf("2 MiB Send a→b: %v, want ErrTooLarge", err)
	}
}

func TestDirectTerminal_ShuttingDownAfterStop(t *testing.T) {
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) })
	ha, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) }, b)
	stopHost(t, ha)
	for _, rid := range []string{"b", "a", "nobody"} {
		wantErrWithin(t, "a→"+rid+" after stop", timedRequest(ctxT(t, 5*time.Second), a, rid, "echo", nil), zlink.ErrShuttingDown, promptBound)
		if err := a.SendNode(ctxT(t, 5*time.Second), rid, "echo", nil); !errors.Is(err, zlink.ErrShuttingDown) {
			t.Fatalf("Send a→%s after stop: %v, want ErrShuttingDown", rid, err)
		}
	}
	// b lost a (goodbye or liveness) and keeps working for itself.
	waitFor(t, "b drops a", 10*time.Second, func() bool {
		p, ok := status(t, b).Peer("a")
		return !ok || p.State != routemesh.PeerReady
	})
	wantErrWithin(t, "b→a after a stopped", timedRequest(ctxT(t, 5*time.Second), b, "a", "echo", nil), zlink.ErrNoTarget, promptBound)
	wantReply(t, "b→b", timedRequest(ctxT(t, 5*time.Second), b, "b", "echo", []byte("x")), []byte("echo:x"))
}

func TestDirectTerminal_ShuttingDownForCallsInFlightAtStop(t *testing.T) {
	g := newBlockGate()
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("block", g.request) })
	ha, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) {
		m.SetTimeouts(0, 200*time.Millisecond)
	}, b)
	g.closeAtCleanup(t)

	ch := goRequest(ctxT(t, 30*time.Second), a, "b", "block", nil)
	g.waitEntered(t)
	stopped := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stopped <- ha.Stop(ctx)
	}()
	o := awaitOutcome(t, "in-flight call at Stop", ch, 10*time.Second)
	wantErrWithin(t, "in-flight call at Stop", o, zlink.ErrShuttingDown, 10*time.Second)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while a remote handler was blocked")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop with a 200ms shutdown timeout took %v", d)
	}
}

func TestDirectTerminal_NoTargetWithoutDial(t *testing.T) {
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) })
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectRequest("echo", echo) }, b)
	before := status(t, a)
	wantErrWithin(t, "a→ghost", timedRequest(ctxT(t, 30*time.Second), a, "ghost", "echo", nil), zlink.ErrNoTarget, promptBound)
	if err := a.SendNode(ctxT(t, 5*time.Second), "ghost", "echo", nil); !errors.Is(err, zlink.ErrNoTarget) {
		t.Fatalf("Send a→ghost: %v, want ErrNoTarget", err)
	}
	after := status(t, a)
	if len(after.Peers) != len(before.Peers) {
		t.Fatalf("an unknown RID changed the peers: %+v → %+v", before.Peers, after.Peers)
	}
	if _, ok := after.Peer("ghost"); ok {
		t.Fatalf("a dialed or registered the unknown RID: %+v", after.Peers)
	}
	// Still serving.
	wantReply(t, "a→b", timedRequest(ctxT(t, 5*time.Second), a, "b", "echo", []byte("x")), []byte("echo:x"))
}

func TestDirectTerminal_SendDelivered(t *testing.T) {
	var got sync.Map // payload → from
	var count atomic.Int64
	note := func(c *routemesh.Context, p []byte) {
		got.Store(string(p), c.From)
		count.Add(1)
	}
	_, b := startDirectNode(t, "game", "b", func(m *routemesh.MeshBuilder) { m.HandleDirectSend("note", note) })
	_, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) { m.HandleDirectSend("note", note) }, b)

	for i := 0; i < 10; i++ {
		if err := a.SendNode(ctxT(t, 5*time.Second), "b", "note", []byte("ab"+strconv.Itoa(i))); err != nil {
			t.Fatalf("send a→b: %v", err)
		}
	}
	if err := b.SendNode(ctxT(t, 5*time.Second), "a", "note", []byte("ba")); err != nil {
		t.Fatalf("send b→a: %v", err)
	}
	if err := a.SendNode(ctxT(t, 5*time.Second), "a", "note", []byte("aa")); err != nil {
		t.Fatalf("send a→a: %v", err)
	}
	waitFor(t, "12 sends delivered", 10*time.Second, func() bool { return count.Load() >= 12 })
	for k, want := range map[string]string{"ab0": "a", "ab9": "a", "ba": "b", "aa": "a"} {
		if from, ok := got.Load(k); !ok || from != want {
			t.Fatalf("send %q: delivered=%v from=%v, want from %q", k, ok, from, want)
		}
	}
	if n := count.Load(); n != 12 {
		t.Fatalf("%d deliveries for 12 sends", n)
	}
	// A cancelled context refuses the Send before queueing it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.SendNode(ctx, "b", "note", []byte("late")); !errors.Is(err, zlink.ErrCancelled) {
		t.Fatalf("send with cancelled ctx: %v, want ErrCancelled", err)
	}
}

func TestDirectTerminal_ShuttingDownForSelfCallInFlightAtStop(t *testing.T) {
	// The node's own handler holds the call; it honours its context (it
	// returns when c.Done() closes), as handlers should.
	g := newBlockGate()
	ha, a := startDirectNode(t, "game", "a", func(m *routemesh.MeshBuilder) {
		m.SetTimeouts(0, 200*time.Millisecond).
			HandleDirectRequest("block", func(c *routemesh.Context, p []byte) ([]byte, error) {
				g.entered <- string(p)
				select {
				case <-g.release:
				case <-c.Done():
				}
				return p, nil
			})
	})
	g.closeAtCleanup(t)

	ch := goRequest(ctxT(t, 30*time.Second), a, "a", "block", nil)
	g.waitEntered(t)
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stopped <- ha.Stop(ctx)
	}()
	o := awaitOutcome(t, "in-flight self call at Stop", ch, 10*time.Second)
	wantErrWithin(t, "in-flight self call at Stop", o, zlink.ErrShuttingDown, 10*time.Second)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while the node's own handler was blocked")
	}
}
