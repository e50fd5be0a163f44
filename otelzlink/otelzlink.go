// Package otelzlink is the OpenTelemetry Tracer of ZLink: set it on a
// MeshNode (routemesh.MeshBuilder.SetTracer(otelzlink.New(tp))) and a call
// from a lobby through a match Server to a Spot is one trace, with a span
// per hop: the caller's, the Server handler's, the Spot turn's.
//
// It owns the mapping of the runtime's spans (routemesh.SpanInfo) to
// OpenTelemetry spans and attributes, and the layout of the trace context
// an envelope carries (W3C ids: trace id 16 bytes, span id 8 bytes, trace
// flags 1 byte). It must not touch the runtime's state: it implements
// routemesh.Tracer and nothing else, and the core packages (wire,
// routemesh, spot) never import OpenTelemetry.
package otelzlink

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/zlink-go/zlink/otelzlink"

// Span attributes.
const (
	AttrMesh      = attribute.Key("zlink.mesh")       // MeshName
	AttrChannel   = attribute.Key("zlink.channel")    // ChannelName; "" = Node-direct
	AttrPacket    = attribute.Key("zlink.packet")     // packet name (a Spot turn: the Spot's packet)
	AttrTargetRID = attribute.Key("zlink.target_rid") // the node called, or the node running the handler
	AttrFromRID   = attribute.Key("zlink.from_rid")   // the calling node (handlers, Spot turns)
	AttrSpotKind  = attribute.Key("zlink.spot.kind")  // Spot turns, and calls routed for a caller
	AttrSpotID    = attribute.Key("zlink.spot.id")    // Spot turns, and calls routed for a caller
	AttrErrorCode = attribute.Key("zlink.error.code") // the typed error's code name (timeout, busy, ...)
)

// TraceLen is the length of the trace context this tracer writes.
const TraceLen = 16 + 8 + 1

// Tracer is a routemesh.Tracer on an OpenTelemetry TracerProvider.
type Tracer struct {
	t trace.Tracer
}

var _ routemesh.Tracer = (*Tracer)(nil)

// New returns a Tracer on tp (nil: the global TracerProvider).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Tracer{t: tp.Tracer(ScopeName)}
}

// StartCall starts a client (request) or producer (one-way) span under
// ctx and returns its trace context for the envelope.
func (t *Tracer) StartCall(ctx context.Context, s routemesh.SpanInfo) (routemesh.Span, string) {
	kind := trace.SpanKindClient
	if s.Kind == routemesh.SpanSend {
		kind = trace.SpanKindProducer
	}
	_, sp := t.t.Start(ctx, spanName(s), trace.WithSpanKind(kind), trace.WithAttributes(attributes(s)...))
	return span{sp}, Encode(sp.SpanContext())
}

// StartHandler starts a server span, a child of the incoming trace
// context (or of ctx's span when there is none), and returns ctx carrying
// it.
func (t *Tracer) StartHandler(ctx context.Context, tc string, s routemesh.SpanInfo) (context.Context, routemesh.Span) {
	if sc, ok := Decode(tc); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, sp := t.t.Start(ctx, spanName(s), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attributes(s)...))
	return ctx, span{sp}
}

// spanName is "zlink.<kind> <route>": the route is channel/packet, the
// packet of a Node-direct message, or kind/packet for a Spot turn.
func spanName(s routemesh.SpanInfo) string {
	route := s.Packet
	switch {
	case s.Kind == routemesh.SpanSpotTurn:
		route = s.SpotKind + "/" + s.Packet
	case s.Channel != "":
		route = s.Channel + "/" + s.Packet
	}
	return "zlink." + s.Kind.String() + " " + route
}

func attributes(s routemesh.SpanInfo) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 7)
	a = append(a, AttrMesh.String(s.Mesh), AttrChannel.String(s.Channel), AttrPacket.String(s.Packet), AttrTargetRID.String(s.Target))
	if s.From != "" {
		a = append(a, AttrFromRID.String(s.From))
	}
	if s.SpotKind != "" {
		a = append(a, AttrSpotKind.String(s.SpotKind), AttrSpotID.String(s.SpotID))
	}
	return a
}

// span ends an OpenTelemetry span with a call's outcome.
type span struct{ sp trace.Span }

func (s span) End(err error) {
	if err != nil {
		s.sp.SetAttributes(AttrErrorCode.String(CodeName(err)))
		s.sp.SetStatus(codes.Error, err.Error())
	}
	s.sp.End()
}

// CodeName is the name of a typed error's code as spans record it: the
// wire code name (timeout, busy, no_target, peer_lost, handler, ...), or
// cycle and fenced for the Spot errors of those names.
func CodeName(err error) string {
	switch {
	case errors.Is(err, spot.ErrCycle):
		return "cycle"
	case errors.Is(err, spot.ErrFenced):
		return "fenced"
	}
	return wire.CodeOf(err).String()
}

// Encode writes sc as an envelope's trace context (bytes in a string); ""
// when sc is not valid.
func Encode(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [TraceLen]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], tid[:])
	copy(b[16:], sid[:])
	b[24] = byte(sc.TraceFlags())
	return string(b[:])
}

// Decode reads an envelope's trace context as a remote span context. Bytes
// beyond TraceLen are ignored (room for later additions); a shorter or
// invalid one is no context.
func Decode(b string) (trace.SpanContext, bool) {
	if len(b) < TraceLen {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], b)
	copy(sid[:], b[16:])
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(b[24]), Remote: true})
	return sc, sc.IsValid()
}
