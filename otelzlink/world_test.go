package otelzlink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/otelzlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

const mesh = "game"

type joinReq struct {
	Player string
	Fail   bool // the seat Spot refuses
	Block  bool // the handler waits for its deadline
	Fanout bool // the table calls on: another table, blocking and async, and the match channel
}

var (
	joinP   = wire.NewPacket[joinReq, int64]("join")
	seatP   = wire.NewPacket[joinReq, int64]("seat")
	fanoutP = wire.NewPacket[joinReq, int64]("fanout")
)

var (
	fastLiveness  = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond}
	fastDiscovery = routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second}
	fastSpots     = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}
)

// The "table" Spot kind counts its seated players. A fanout seats the
// player at table t2 (waiting), and without waiting pings the match
// channel and seats them at table t3; the replies go to replies.
func tableKind(replies chan<- *spot.Reply) spot.Registration {
	k := spot.NewKind("table", func(string) *int64 { return new(int64) })
	async := k.OnReply(func(_ *spot.Context, _ *int64, r *spot.Reply) { replies <- r })
	spot.On(k, seatP, func(_ *spot.Context, n *int64, r joinReq) (int64, error) {
		if r.Fail {
			return 0, fmt.Errorf("no seat for %s", r.Player)
		}
		*n++
		return *n, nil
	})
	spot.On(k, fanoutP, func(c *spot.Context, _ *int64, r joinReq) (int64, error) {
		n, err := spot.Call(c, c.Node, "table", "t2", seatP, r)
		if err != nil {
			return 0, err
		}
		body, _ := seatP.EncodeRequest(r)
		if err := async.Call(c, "match", "ping", body, 5*time.Second, "ping"); err != nil {
			return 0, err
		}
		return n, async.CallSpot(c, "table", "t3", seatP.Name(), body, 5*time.Second, "t3")
	})
	return k
}

// start starts an automatic node of mesh on store; setup declares its
// roles. tp nil = tracing off.
func start(t testing.TB, store location.Store, prefix string, tp trace.TracerProvider, setup func(*routemesh.MeshBuilder)) *routemesh.Node {
	t.Helper()
	opts := zlink.NewOptions().SetLocationStore(store)
	b := opts.AddRouteMesh(mesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery)
	if tp != nil {
		b.SetTracer(otelzlink.New(tp))
	}
	setup(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start %s: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("stop %s: %v", prefix, err)
		}
	})
	return h.Mesh(mesh)
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// world is a lobby (no object role) that calls channel "match" on a match
// Server (an Object Client), whose handler seats the player at a "table"
// Spot hosted by an Object Server: three nodes over loopback ZeroMQ.
type world struct {
	lobby, match, objects *routemesh.Node
	replies               chan *spot.Reply // of the tables' asynchronous calls
}

// newWorld starts the three nodes; lobbyTP and tp are the lobby's and the
// other two nodes' tracer providers (nil = tracing off).
func newWorld(t *testing.T, lobbyTP, tp trace.TracerProvider) *world {
	store := location.NewMemory()
	w := &world{replies: make(chan *spot.Reply, 2)}
	w.objects = start(t, store, "objects", tp, func(b *routemesh.MeshBuilder) {
		b.SetObjectRole(routemesh.ObjectServer)
		b.Channel("match").Client()
		spot.EnableWith(b, fastSpots, tableKind(w.replies))
	})
	w.match = start(t, store, "match", tp, func(b *routemesh.MeshBuilder) {
		b.SetObjectRole(routemesh.ObjectClient)
		spot.EnableWith(b, fastSpots)
		srv := b.Channel("match").Server()
		srv.HandleRequest("ping", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
		routemesh.OnRequest(srv, joinP, func(c *routemesh.Context, r joinReq) (int64, error) {
			if r.Block {
				<-c.Done()
				return 0, fmt.Errorf("%w: %w", wire.ErrTimeout, c.Err())
			}
			if r.Fanout {
				return spot.Call(c, c.Node(), "table", "t1", fanoutP, r)
			}
			return spot.Call(c, c.Node(), "table", "t1", seatP, r)
		})
	})
	w.lobby = start(t, store, "lobby", lobbyTP, func(b *routemesh.MeshBuilder) {
		b.Channel("match").Client()
	})
	if err := w.lobby.WaitReady(ctxT(t, 10*time.Second), "match"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*routemesh.Node{w.match, w.objects} {
		if err := n.WaitPeers(ctxT(t, 10*time.Second), 2); err != nil {
			t.Fatalf("%s: %v", n.RID(), err)
		}
		if err := spot.WaitReady(ctxT(t, 10*time.Second), n); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func newProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spansOf waits until the trace tid has a span of every name in names
// and returns the trace's spans by name.
func spansOf(t *testing.T, exp *tracetest.InMemoryExporter, tid trace.TraceID, names ...string) map[string]tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == tid {
				got[s.Name] = s
			}
		}
		missing := ""
		for _, n := range names {
			if _, ok := got[n]; !ok {
				missing = n
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("span %q of trace %s never ended; have %v", missing, tid, keys(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func attr(s tracetest.SpanStub, k attribute.Key) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value.Emit()
		}
	}
	return "<unset>"
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, got, v)
		}
	}
}

func wantParent(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("span %q: parent %s, want %q (%s)", child.Name, child.Parent.SpanID(), parent.Name, parent.SpanContext.SpanID())
	}
}

const (
	callName    = "zlink.call match/join"
	handlerName = "zlink.handler match/join"
	spotCall    = "zlink.call zlink.spot"
	turnName    = "zlink.spot_turn table/seat"
)

// traceSpans waits until trace tid has n ended spans and returns them.
func traceSpans(t *testing.T, exp *tracetest.InMemoryExporter, tid trace.TraceID, n int) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == tid {
				got = append(got, s)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s has %d spans, want %d", tid, len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// childOf returns the one span named name whose parent is parent.
func childOf(t *testing.T, spans []tracetest.SpanStub, parent tracetest.SpanStub, name string, want map[attribute.Key]string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
next:
	for _, s := range spans {
		if s.Name != name || s.Parent.SpanID() != parent.SpanContext.SpanID() {
			continue
		}
		for k, v := range want {
			if attr(s, k) != v {
				continue next
			}
		}
		found = append(found, s)
	}
	if len(found) != 1 {
		var all []string
		for _, s := range spans {
			all = append(all, s.Name+"<-"+s.Parent.SpanID().String())
		}
		t.Fatalf("%d spans %q %v under %q (%s); trace: %v", len(found), name, want, parent.Name, parent.SpanContext.SpanID(), all)
	}
	return found[0]
}
