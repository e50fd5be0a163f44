package otelzlink_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zlink-go/zlink/otelzlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
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

// Calls a Spot turn makes continue the trace: a blocking Spot call, an
// asynchronous channel call and an asynchronous Spot call are children of
// the turn's span, and the turns and handler they reach are theirs.
func TestTrace_SpotTurnCallsContinueTheTrace(t *testing.T) {
	tp, exp := newProvider(t)
	w := newWorld(t, tp, tp)

	ctx, root := tp.Tracer("test").Start(ctxT(t, 10*time.Second), "lobby request")
	if _, err := routemesh.Call(ctx, w.lobby, "match", joinP, joinReq{Player: "p5", Fanout: true}); err != nil {
		t.Fatal(err)
	}
	root.End()
	for range 2 {
		select {
		case r := <-w.replies:
			if r.Err != nil {
				t.Fatalf("async reply %v: %v", r.Tag, r.Err)
			}
		case <-ctx.Done():
			t.Fatal("the asynchronous replies never came")
		}
	}
	spans := traceSpans(t, exp, root.SpanContext().TraceID(), 13)
	var rootStub tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "lobby request" {
			rootStub = s
		}
	}
	call := childOf(t, spans, rootStub, callName, nil)
	handler := childOf(t, spans, call, handlerName, nil)
	inner := childOf(t, spans, handler, spotCall, nil)
	t1 := childOf(t, spans, inner, "zlink.spot_turn table/fanout", map[attribute.Key]string{otelzlink.AttrSpotID: "t1"})

	// Two Spot calls (t2 waited for, t3 not), each the parent of its turn.
	var seated []string
	for _, c := range spans {
		if c.Name == spotCall && c.Parent.SpanID() == t1.SpanContext.SpanID() {
			wantAttrs(t, c, map[attribute.Key]string{otelzlink.AttrTargetRID: w.objects.RID()})
			for _, s := range spans {
				if s.Name == turnName && s.Parent.SpanID() == c.SpanContext.SpanID() {
					seated = append(seated, attr(s, otelzlink.AttrSpotID))
				}
			}
		}
	}
	slices.Sort(seated)
	if !slices.Equal(seated, []string{"t2", "t3"}) {
		t.Fatalf("turns under the fanout's Spot calls: %v, want t2 and t3", seated)
	}

	ping := childOf(t, spans, t1, "zlink.call match/ping", map[attribute.Key]string{otelzlink.AttrTargetRID: w.match.RID()})
	childOf(t, spans, ping, "zlink.handler match/ping", map[attribute.Key]string{otelzlink.AttrFromRID: w.objects.RID()})

	// Each asynchronous call's reply runs an OnReply turn of t1: a span
	// under the turn that made the call.
	replies := 0
	for _, s := range spans {
		if s.Name == "zlink.spot_turn table/OnReply" && s.Parent.SpanID() == t1.SpanContext.SpanID() {
			wantAttrs(t, s, map[attribute.Key]string{otelzlink.AttrSpotID: "t1"})
			replies++
		}
	}
	if replies != 2 {
		t.Fatalf("%d OnReply turns under t1's span, want 2 (one per asynchronous call)", replies)
	}
}

// A Spot call routed through an Object Server (CallViaRaw) is traced there
// too: the router's handler span is the child of the caller's, and the
// call it makes on the caller's behalf reaches the turn in the same trace.
func TestTrace_CallViaRoutesInTheTrace(t *testing.T) {
	tp, exp := newProvider(t)
	w := newWorld(t, tp, tp)

	ctx, root := tp.Tracer("test").Start(ctxT(t, 10*time.Second), "via request")
	body, _ := seatP.EncodeRequest(joinReq{Player: "p6"})
	if _, _, err := spot.CallViaRaw(ctx, w.match, w.objects.RID(), "table", "t9", seatP.Name(), body); err != nil {
		t.Fatal(err)
	}
	root.End()
	spans := traceSpans(t, exp, root.SpanContext().TraceID(), 5)
	rootStub := childOf(t, spans, tracetest.SpanStub{}, "via request", nil)
	call := childOf(t, spans, rootStub, spotCall, map[attribute.Key]string{otelzlink.AttrTargetRID: w.objects.RID()})
	route := childOf(t, spans, call, "zlink.handler zlink.spot", map[attribute.Key]string{
		otelzlink.AttrSpotKind: "table", otelzlink.AttrSpotID: "t9", otelzlink.AttrFromRID: w.match.RID()})
	hop := childOf(t, spans, route, spotCall, nil)
	childOf(t, spans, hop, turnName, map[attribute.Key]string{otelzlink.AttrSpotID: "t9"})
}
