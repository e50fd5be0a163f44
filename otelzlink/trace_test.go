package otelzlink_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
}

var (
	joinP = wire.NewPacket[joinReq, int64]("join")
	seatP = wire.NewPacket[joinReq, int64]("seat")
)

var (
	fastLiveness  = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond}
	fastDiscovery = routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second}
	fastSpots     = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}
)

// The "seat" Spot kind: a table that counts its seated players.
func tableKind() spot.Registration {
	k := spot.NewKind("table", func(string) *int64 { return new(int64) })
	spot.On(k, seatP, func(_ *spot.Context, n *int64, r joinReq) (int64, error) {
		if r.Fail {
			return 0, fmt.Errorf("no seat for %s", r.Player)
		}
		*n++
		return *n, nil
	})
	return k
}

// start starts an automatic node of mesh on store; setup declares its
// roles. tp nil = tracing off.
func start(t *testing.T, store location.Store, prefix string, tp trace.TracerProvider, setup func(*routemesh.MeshBuilder)) *routemesh.Node {
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

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// world is a lobby (no object role) that calls channel "match" on a match
// Server (an Object Client), whose handler seats the player at a "table"
// Spot hosted by an Object Server: three nodes over loopback ZeroMQ.
type world struct {
	lobby, match, objects *routemesh.Node
}

// newWorld starts the three nodes; lobbyTP and tp are the lobby's and the
// other two nodes' tracer providers (nil = tracing off).
func newWorld(t *testing.T, lobbyTP, tp trace.TracerProvider) *world {
	store := location.NewMemory()
	w := &world{}
	w.objects = start(t, store, "objects", tp, func(b *routemesh.MeshBuilder) {
		b.SetObjectRole(routemesh.ObjectServer)
		spot.EnableWith(b, fastSpots, tableKind())
	})
	w.match = start(t, store, "match", tp, func(b *routemesh.MeshBuilder) {
		b.SetObjectRole(routemesh.ObjectClient)
		spot.EnableWith(b, fastSpots)
		routemesh.OnRequest(b.Channel("match").Server(), joinP, func(c *routemesh.Context, r joinReq) (int64, error) {
			if r.Block {
				<-c.Done()
				return 0, fmt.Errorf("%w: %w", wire.ErrTimeout, c.Err())
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

// A call from the lobby through the match Server to a Spot is one trace:
// the lobby's caller span, the match handler's span, the handler's own
// caller span for the Spot request, and the Spot turn's span, each the
// child of the one before, across real sockets.
func TestTrace_LobbyMatchSpotIsOneTrace(t *testing.T) {
	tp, exp := newProvider(t)
	w := newWorld(t, tp, tp)

	ctx, root := tp.Tracer("test").Start(ctxT(t, 10*time.Second), "lobby request")
	seat, err := routemesh.Call(ctx, w.lobby, "match", joinP, joinReq{Player: "p1"})
	root.End()
	if err != nil || seat != 1 {
		t.Fatalf("join = %d, %v", seat, err)
	}
	tid := root.SpanContext().TraceID()
	got := spansOf(t, exp, tid, "lobby request", callName, handlerName, spotCall, turnName)
	call, handler, inner, turn := got[callName], got[handlerName], got[spotCall], got[turnName]

	wantParent(t, call, got["lobby request"])
	wantParent(t, handler, call)
	wantParent(t, inner, handler)
	wantParent(t, turn, inner)
	if !handler.Parent.IsRemote() || !turn.Parent.IsRemote() {
		t.Error("the handler's and the turn's parents did not come over the wire")
	}
	kinds := map[string]trace.SpanKind{callName: trace.SpanKindClient, handlerName: trace.SpanKindServer,
		spotCall: trace.SpanKindClient, turnName: trace.SpanKindServer}
	for name, k := range kinds {
		if got[name].SpanKind != k {
			t.Errorf("span %q kind %v, want %v", name, got[name].SpanKind, k)
		}
		if got[name].Status.Code == codes.Error {
			t.Errorf("span %q status error: %s", name, got[name].Status.Description)
		}
	}
	wantAttrs(t, call, map[attribute.Key]string{otelzlink.AttrMesh: mesh, otelzlink.AttrChannel: "match",
		otelzlink.AttrPacket: "join", otelzlink.AttrTargetRID: w.match.RID()})
	wantAttrs(t, handler, map[attribute.Key]string{otelzlink.AttrMesh: mesh, otelzlink.AttrChannel: "match",
		otelzlink.AttrPacket: "join", otelzlink.AttrTargetRID: w.match.RID(), otelzlink.AttrFromRID: w.lobby.RID()})
	wantAttrs(t, inner, map[attribute.Key]string{otelzlink.AttrChannel: "", otelzlink.AttrPacket: "zlink.spot",
		otelzlink.AttrTargetRID: w.objects.RID()})
	wantAttrs(t, turn, map[attribute.Key]string{otelzlink.AttrMesh: mesh, otelzlink.AttrPacket: "seat",
		otelzlink.AttrSpotKind: "table", otelzlink.AttrSpotID: "t1",
		otelzlink.AttrTargetRID: w.objects.RID(), otelzlink.AttrFromRID: w.match.RID()})
}

// Typed errors are the span status: a Spot handler's error is the turn's,
// the match handler's and the lobby call's (code handler); a call that
// runs out of time ends its span with code timeout.
func TestTrace_TypedErrorsAreSpanStatus(t *testing.T) {
	tp, exp := newProvider(t)
	w := newWorld(t, tp, tp)

	ctx, root := tp.Tracer("test").Start(ctxT(t, 10*time.Second), "failing join")
	_, err := routemesh.Call(ctx, w.lobby, "match", joinP, joinReq{Player: "p2", Fail: true})
	root.End()
	if !errors.Is(err, wire.ErrHandler) {
		t.Fatalf("join = %v, want ErrHandler", err)
	}
	got := spansOf(t, exp, root.SpanContext().TraceID(), callName, handlerName, turnName)
	for _, name := range []string{callName, handlerName, turnName} {
		s := got[name]
		if s.Status.Code != codes.Error || !strings.Contains(s.Status.Description, "no seat for p2") {
			t.Errorf("span %q status %v %q, want error with the handler's message", name, s.Status.Code, s.Status.Description)
		}
		wantAttrs(t, s, map[attribute.Key]string{otelzlink.AttrErrorCode: "handler"})
	}

	ctx, root = tp.Tracer("test").Start(ctxT(t, 10*time.Second), "slow join")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = routemesh.Call(short, w.lobby, "match", joinP, joinReq{Player: "p3", Block: true})
	root.End()
	if !errors.Is(err, wire.ErrTimeout) {
		t.Fatalf("join = %v, want ErrTimeout", err)
	}
	got = spansOf(t, exp, root.SpanContext().TraceID(), callName, handlerName)
	for _, name := range []string{callName, handlerName} {
		s := got[name]
		if s.Status.Code != codes.Error {
			t.Errorf("span %q status %v, want error", name, s.Status.Code)
		}
		wantAttrs(t, s, map[attribute.Key]string{otelzlink.AttrErrorCode: "timeout"})
	}
}

// A node with tracing off carries no trace context, even when its
// caller's context has a span: the traced match Server's handler starts a
// trace of its own, and nothing of the lobby's trace is recorded there.
func TestTrace_OffCarriesNothing(t *testing.T) {
	tp, exp := newProvider(t)
	lobbyTP, _ := newProvider(t)
	w := newWorld(t, nil, tp)

	ctx, root := lobbyTP.Tracer("test").Start(ctxT(t, 10*time.Second), "lobby request")
	if _, err := routemesh.Call(ctx, w.lobby, "match", joinP, joinReq{Player: "p4"}); err != nil {
		t.Fatal(err)
	}
	root.End()
	var handler tracetest.SpanStub
	deadline := time.Now().Add(10 * time.Second)
	for handler.Name == "" {
		for _, s := range exp.GetSpans() {
			if s.Name == handlerName {
				handler = s
			}
		}
		if handler.Name == "" && time.Now().After(deadline) {
			t.Fatal("the match handler's span never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if handler.Parent.IsValid() || handler.SpanContext.TraceID() == root.SpanContext().TraceID() {
		t.Fatalf("handler span has parent %v in trace %s: the untraced lobby carried a trace context",
			handler.Parent.SpanID(), handler.SpanContext.TraceID())
	}
	for _, s := range exp.GetSpans() {
		if s.Name == callName {
			t.Fatalf("the untraced lobby recorded %q", s.Name)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sid := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	b := otelzlink.Encode(sc)
	if len(b) != otelzlink.TraceLen || len(b) > wire.MaxTraceLen {
		t.Fatalf("encoded %d bytes", len(b))
	}
	got, ok := otelzlink.Decode(b + "\xff") // later additions are ignored
	if !ok || got.TraceID() != tid || got.SpanID() != sid || !got.IsSampled() || !got.IsRemote() {
		t.Fatalf("decoded %v %v", got, ok)
	}
	if otelzlink.Encode(trace.SpanContext{}) != "" {
		t.Fatal("an invalid span context was encoded")
	}
	for _, bad := range []string{"", b[:24], string(make([]byte, otelzlink.TraceLen))} {
		if _, ok := otelzlink.Decode(bad); ok {
			t.Fatalf("decoded %x", bad)
		}
	}
}
