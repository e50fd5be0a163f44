package routemesh

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/wire"
)

// recTracer records the spans a node starts; a span's trace context is
// its id (one byte), and a handler's context carries its span so nested
// calls name it as their parent.
type recTracer struct {
	mu    sync.Mutex
	spans []*recSpan
	ended chan *recSpan
}

type recSpan struct {
	t      *recTracer
	id     byte
	info   SpanInfo
	parent byte // the parent's id; 0 = none
	err    error
}

type recKey struct{}

func newRecTracer() *recTracer { return &recTracer{ended: make(chan *recSpan, 64)} }

func (t *recTracer) start(s SpanInfo, parent byte) *recSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	sp := &recSpan{t: t, id: byte(len(t.spans) + 1), info: s, parent: parent}
	t.spans = append(t.spans, sp)
	return sp
}

func (t *recTracer) StartCall(ctx context.Context, s SpanInfo) (Span, string) {
	var parent byte
	if p, ok := ctx.Value(recKey{}).(*recSpan); ok {
		parent = p.id
	}
	sp := t.start(s, parent)
	return sp, string([]byte{sp.id})
}

func (t *recTracer) StartHandler(ctx context.Context, tc string, s SpanInfo) (context.Context, Span) {
	var parent byte
	if len(tc) == 1 {
		parent = tc[0]
	}
	sp := t.start(s, parent)
	return context.WithValue(ctx, recKey{}, sp), sp
}

func (s *recSpan) End(err error) {
	s.err = err
	s.t.ended <- s
}

// next returns the next span that ends, bounded by a deadline.
func (t *recTracer) next(tb testing.TB) *recSpan {
	tb.Helper()
	select {
	case sp := <-t.ended:
		return sp
	case <-time.After(10 * time.Second):
		tb.Fatal("no span ended")
		return nil
	}
}

// startTraced starts node rid over loopback ZeroMQ with tr as its Tracer
// (nil = off).
func startTraced(tb testing.TB, rid string, tr Tracer, setup func(*MeshBuilder)) *Node {
	tb.Helper()
	mb := NewMeshBuilder("trace").Listen("tcp://127.0.0.1:0").SetRoutingID(rid)
	if tr != nil {
		mb.SetTracer(tr)
	}
	setup(mb)
	sys := actors.NewSystem(actors.Config{Name: "t-" + rid})
	n, err := Start(context.Background(), mb.Config(), Deps{System: sys})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = n.Stop(context.Background())
		_ = sys.Shutdown(context.Background())
	})
	return n
}

// tracedPair is a server (channel "echo", direct "echo", "nest" and
// "note") and a client that dialed it, each with its own tracer.
func tracedPair(tb testing.TB, cliT, srvT Tracer, notes chan<- string) (cli, srv *Node) {
	srv = startTraced(tb, "srv", srvT, func(mb *MeshBuilder) {
		mb.Channel("echo").Server().HandleRequest("echo", echo)
		mb.HandleDirectRequest("echo", echo)
		mb.HandleDirectRequest("nest", func(c *Context, p []byte) ([]byte, error) {
			return c.Node().CallNode(c, c.RID, "echo", p) // to itself, in the handler's trace
		})
		mb.HandleDirectSend("note", func(_ *Context, p []byte) { notes <- string(p) })
	})
	cli = startTraced(tb, "cli", cliT, func(mb *MeshBuilder) {
		mb.AddPeer(srv.Endpoint(), "srv")
		mb.Channel("echo").Client()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitReady(ctx, "echo"); err != nil {
		tb.Fatal(err)
	}
	return cli, srv
}

func wantSpan(t *testing.T, sp *recSpan, kind SpanKind, packet, target string, parent byte) {
	t.Helper()
	if sp.info.Kind != kind || sp.info.Packet != packet || sp.info.Target != target || sp.parent != parent || sp.info.Mesh != "trace" {
		t.Fatalf("span %d = %+v parent %d; want %v %s to %s, parent %d", sp.id, sp.info, sp.parent, kind, packet, target, parent)
	}
}

// Every way of calling starts one span on the caller, ended with the
// call's terminal result, and the handler's span is its child over the
// wire; a handler's nested call (here to its own node) continues it.
func TestTrace_SpansAcrossTheWire(t *testing.T) {
	cliT, srvT := newRecTracer(), newRecTracer()
	notes := make(chan string, 1)
	cli, _ := tracedPair(t, cliT, srvT, notes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := cli.Call(ctx, "echo", "echo", []byte("a")); err != nil {
		t.Fatal(err)
	}
	h := srvT.next(t)
	c := cliT.next(t)
	wantSpan(t, c, SpanCall, "echo", "srv", 0)
	wantSpan(t, h, SpanHandler, "echo", "srv", c.id)
	if c.info.Channel != "echo" || h.info.Channel != "echo" || h.info.From != "cli" || c.err != nil || h.err != nil {
		t.Fatalf("call %+v %v, handler %+v %v", c.info, c.err, h.info, h.err)
	}

	f := cli.CallNodeFuture("srv", "nest", []byte("b"), 5*time.Second)
	if _, err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c = cliT.next(t)
	wantSpan(t, c, SpanCall, "nest", "srv", 0)
	// In the order they end: the inner handler, the inner call, then the
	// nest handler.
	echoH, inner, nest := srvT.next(t), srvT.next(t), srvT.next(t)
	wantSpan(t, nest, SpanHandler, "nest", "srv", c.id)
	wantSpan(t, inner, SpanCall, "echo", "srv", nest.id)
	wantSpan(t, echoH, SpanHandler, "echo", "srv", inner.id)

	if err := cli.SendNode(ctx, "srv", "note", []byte("c")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notes:
	case <-ctx.Done():
		t.Fatal("the note never arrived")
	}
	c, h = cliT.next(t), srvT.next(t)
	wantSpan(t, c, SpanSend, "note", "srv", 0)
	wantSpan(t, h, SpanHandler, "note", "srv", c.id)

	// An asynchronous call made under a handler's context continues it.
	parent := cliT.start(SpanInfo{Kind: SpanHandler}, 0)
	replies := make(chan *Reply, 1)
	sys := actors.NewSystem(actors.Config{Name: "t-caller"})
	defer func() { _ = sys.Shutdown(context.Background()) }()
	ref, err := sys.Spawn(actors.Spec{Name: "caller", MaxMessages: 4, Producer: func() actors.Actor {
		return actors.ReceiveFunc(func(c *actors.Context) {
			if r, ok := c.Message().(*Reply); ok {
				replies <- r
			}
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	pctx := context.WithValue(context.Background(), recKey{}, parent)
	if err := cli.CallAsyncContext(pctx, "echo", "echo", []byte("d"), 5*time.Second, ref.ReplyTo(), "tag"); err != nil {
		t.Fatal(err)
	}
	if r := <-replies; r.Err != nil || r.Tag != "tag" {
		t.Fatalf("reply %+v", r)
	}
	c, h = cliT.next(t), srvT.next(t)
	wantSpan(t, c, SpanCall, "echo", "srv", parent.id)
	wantSpan(t, h, SpanHandler, "echo", "srv", c.id)

	// A typed error is the caller span's outcome; the server records the
	// refusal as the caller span's child, though no handler ran.
	if _, err := cli.Call(ctx, "echo", "nope", nil); !errors.Is(err, wire.ErrUnknownPacket) {
		t.Fatalf("call = %v", err)
	}
	c, h = cliT.next(t), srvT.next(t)
	if !errors.Is(c.err, wire.ErrUnknownPacket) {
		t.Fatalf("span ended with %v", c.err)
	}
	wantSpan(t, h, SpanHandler, "nope", "srv", c.id)
	if !errors.Is(h.err, wire.ErrUnknownPacket) || h.info.Channel != "echo" || h.info.From != "cli" {
		t.Fatalf("refusal span %+v ended with %v", h.info, h.err)
	}
	// A one-way message for a packet without a handler: the same.
	if err := cli.SendNode(ctx, "srv", "nope", nil); err != nil {
		t.Fatal(err)
	}
	c, h = cliT.next(t), srvT.next(t)
	wantSpan(t, c, SpanSend, "nope", "srv", 0)
	wantSpan(t, h, SpanHandler, "nope", "srv", c.id)
	if !errors.Is(h.err, wire.ErrUnknownPacket) {
		t.Fatalf("refused send's span ended with %v", h.err)
	}
}

// A node without a Tracer sends no trace context, even under a context a
// tracer would read: the traced server's handler spans have no parent.
func TestTrace_OffSendsNoContext(t *testing.T) {
	srvT := newRecTracer()
	cli, _ := tracedPair(t, nil, srvT, make(chan string, 1))
	parent := newRecTracer().start(SpanInfo{}, 0)
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), recKey{}, parent), 10*time.Second)
	defer cancel()
	if _, err := cli.Call(ctx, "echo", "echo", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.CallNodeFuture("srv", "echo", nil, 5*time.Second).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if h := srvT.next(t); h.parent != 0 {
			t.Fatalf("handler span %+v has parent %d: the untraced client sent a trace context", h.info, h.parent)
		}
	}
}

// A peer that did not announce the trace capability gets no trace
// context (a reader without it would refuse the extra field).
func TestTrace_OnlyToPeersThatReadIt(t *testing.T) {
	cliT, srvT := newRecTracer(), newRecTracer()
	cli, _ := tracedPair(t, cliT, srvT, make(chan string, 1))
	l := cli.load().links["srv"]
	if l == nil || !l.trace {
		t.Fatal("the server did not announce the trace capability")
	}
	e := wire.Envelope{Kind: wire.KindRequest, Packet: "echo"}
	old := &link{rid: l.rid, gen: l.gen, p: l.p, objectRole: l.objectRole, recvLimit: l.recvLimit}
	cli.startCall(cliT, context.Background(), old, &e, SpanCall)
	if e.Trace != "" {
		t.Fatalf("trace context %x for a peer without the capability", e.Trace)
	}
	cli.startCall(cliT, context.Background(), l, &e, SpanCall)
	if e.Trace == "" {
		t.Fatal("no trace context for a peer with the capability")
	}
}

// A request its owner refuses (a full mailbox: ErrBusy) gets a span on the
// server too, ended with that refusal, as the caller span's child.
func TestTrace_BusyRefusalHasAServerSpan(t *testing.T) {
	cliT, srvT := newRecTracer(), newRecTracer()
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	srv := startTraced(t, "srv", srvT, func(mb *MeshBuilder) {
		mb.ConfigureRouterSocket(SocketConfig{MailboxMessageBudget: 1}).SetHandlerConcurrency(1)
		mb.HandleDirectRequest("hold", func(*Context, []byte) ([]byte, error) {
			select {
			case started <- struct{}{}:
			default: // the calls admitted behind the first run once released
			}
			<-release
			return nil, nil
		})
	})
	cli := startTraced(t, "cli", cliT, func(mb *MeshBuilder) { mb.AddPeer(srv.Endpoint(), "srv") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitPeers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// One runs; of the next ten at most two are admitted (the pool's queue
	// and the mailbox hold one each), the rest are refused.
	running := cli.CallNodeFuture("srv", "hold", nil, 10*time.Second)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the first call never ran")
	}
	more := make([]*Future, 10)
	for i := range more {
		more[i] = cli.CallNodeFuture("srv", "hold", nil, 10*time.Second)
	}
	busy := 0
	for _, f := range more {
		select {
		case <-f.Done():
			if _, err := f.Wait(ctx); !errors.Is(err, wire.ErrBusy) {
				t.Fatalf("a call ended with %v, want ErrBusy (or to wait)", err)
			}
			busy++
		default: // admitted: it waits behind the first
		}
	}
	if busy == 0 {
		// The refusals may still be on their way: wait for the last one.
		if _, err := more[len(more)-1].Wait(ctx); !errors.Is(err, wire.ErrBusy) {
			t.Fatalf("the tenth call = %v, want ErrBusy", err)
		}
	}
	// The refused call's spans: find the server span that ended with
	// ErrBusy, and the caller span it names as its parent.
	var refused *recSpan
	for refused == nil {
		if sp := srvT.next(t); errors.Is(sp.err, wire.ErrBusy) {
			refused = sp
		}
	}
	wantSpan(t, refused, SpanHandler, "hold", "srv", refused.parent)
	if refused.parent == 0 {
		t.Fatal("the refusal's span has no parent")
	}
	for {
		c := cliT.next(t)
		if c.id == refused.parent {
			if !errors.Is(c.err, wire.ErrBusy) {
				t.Fatalf("caller span ended with %v", c.err)
			}
			break
		}
	}
	_ = running
}
