package routemesh

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
	"github.com/zlink-go/zlink/wire"
)

// testExt records its lifecycle and answers deferred requests.
type testExt struct {
	mu      sync.Mutex
	spawned int
	stopped bool
	drained bool
	held    []*Request
}

type extActor struct{ e *testExt }

func (a *extActor) Receive(*actors.Context) {}

func (e *testExt) Spec() actors.Spec {
	return actors.Spec{Name: "ext", Kind: "ext", Producer: func() actors.Actor {
		e.mu.Lock()
		e.spawned++
		e.mu.Unlock()
		return &extActor{e: e}
	}}
}

func (e *testExt) Stop(context.Context) {
	e.mu.Lock()
	e.stopped = true
	held := e.held
	e.held = nil
	e.mu.Unlock()
	for _, r := range held {
		r.Fail(wire.ErrShuttingDown)
	}
}

func (e *testExt) Drain(context.Context) error {
	e.mu.Lock()
	e.drained = true
	e.mu.Unlock()
	return nil
}

func startExt(t *testing.T, nw *memnet.Network, ext *testExt) *memNode {
	t.Helper()
	b := NewMeshBuilder("m").SetRoutingID("x").SetLogger(testLog(t)).SetTimeouts(time.Second, 2*time.Second).
		Extend("test", func(*Node) (Extension, error) { return ext, nil }).
		HandleDirectDeferred("later", func(r *Request) {
			switch string(r.Payload) {
			case "now":
				r.Reply([]byte("done"))
			case "panic":
				panic("deferred boom")
			case "busy":
				r.Fail(wire.ErrBusy)
			default: // held until the test or Stop ends it
				ext.mu.Lock()
				ext.held = append(ext.held, r)
				ext.mu.Unlock()
			}
		})
	cfg := b.Config()
	sys := actors.NewSystem(actors.Config{Name: "t-ext"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg, Deps{System: sys, transport: nw.Host("x")})
	if err != nil {
		_ = sys.Shutdown(context.Background())
		t.Fatal(err)
	}
	var once sync.Once
	mn := &memNode{Node: n, stop: func() {
		once.Do(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer scancel()
			_ = n.Stop(sctx)
			_ = sys.Shutdown(sctx)
		})
	}}
	t.Cleanup(mn.stop)
	return mn
}

func TestExtension_DeferredRequests(t *testing.T) {
	ext := &testExt{}
	n := startExt(t, memnet.New(1), ext)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := n.CallNode(ctx, n.RID(), "later", []byte("now")); err != nil || string(out) != "done" {
		t.Fatalf("reply: %q %v", out, err)
	}
	if _, err := n.CallNode(ctx, n.RID(), "later", []byte("panic")); !errors.Is(err, wire.ErrHandler) {
		t.Fatalf("panicking deferred handler: %v, want ErrHandler", err)
	}
	if _, err := n.CallNode(ctx, n.RID(), "later", []byte("busy")); !errors.Is(err, wire.ErrBusy) {
		t.Fatalf("Fail(ErrBusy): %v, want ErrBusy (framework codes are kept)", err)
	}
	// A held request is answered later from another goroutine; the second
	// answer does nothing.
	res := make(chan error, 1)
	go func() {
		_, err := n.CallNode(ctx, n.RID(), "later", []byte("hold"))
		res <- err
	}()
	waitUntil(t, "the request is held", 5*time.Second, func() bool { ext.mu.Lock(); defer ext.mu.Unlock(); return len(ext.held) == 1 })
	ext.mu.Lock()
	r := ext.held[0]
	ext.held = nil
	ext.mu.Unlock()
	r.Reply(nil)
	r.Fail(wire.ErrBusy)
	if err := <-res; err != nil {
		t.Fatalf("held request: %v", err)
	}
	if !r.Done() {
		t.Fatal("Done after Reply")
	}
	if ext.spawned != 1 {
		t.Fatalf("extension actor spawned %d times", ext.spawned)
	}
}

// Drain runs the extension's Drain and waits for its admitted requests;
// Stop runs its Stop, which ends what it holds.
func TestExtension_DrainAndStop(t *testing.T) {
	ext := &testExt{}
	n := startExt(t, memnet.New(1), ext)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := n.CallNode(ctx, n.RID(), "later", []byte("hold"))
		res <- err
	}()
	waitUntil(t, "the request is held", 5*time.Second, func() bool { ext.mu.Lock(); defer ext.mu.Unlock(); return len(ext.held) == 1 })
	if err := n.Drain(ctx); !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("drain with a held request: %v, want ErrDrainTimeout", err)
	}
	if !ext.drained {
		t.Fatal("the extension's Drain did not run")
	}
	n.stop()
	if err := <-res; !errors.Is(err, wire.ErrShuttingDown) {
		t.Fatalf("held request at stop: %v", err)
	}
	if !ext.stopped {
		t.Fatal("the extension's Stop did not run")
	}
}

func TestExtension_Refusals(t *testing.T) {
	f := func(*Node) (Extension, error) { return &testExt{}, nil }
	b := NewMeshBuilder("m").Extend("a", f).Extend("a", f)
	if err := b.Config().buildErr; !errors.Is(err, ErrInvalid) {
		t.Fatalf("attached twice: %v", err)
	}
	b = NewMeshBuilder("m").HandleDirectRequest("p", echo).HandleDirectDeferred("p", func(r *Request) {})
	if err := b.Config().buildErr; !errors.Is(err, ErrInvalid) {
		t.Fatalf("deferred packet taken: %v", err)
	}
	want := errors.New("no")
	cfg := NewMeshBuilder("m").SetRoutingID("x").Extend("bad", func(*Node) (Extension, error) { return nil, want }).Config()
	sys := actors.NewSystem(actors.Config{Name: "t-ext-bad"})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Start(ctx, cfg, Deps{System: sys, transport: memnet.New(1).Host("x")}); !errors.Is(err, want) {
		t.Fatalf("factory error: %v", err)
	}
}
