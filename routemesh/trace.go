package routemesh

import (
	"context"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/wire"
)

// Tracing. A node with a Tracer (MeshBuilder.SetTracer) starts a span for
// every request and one-way message it makes, carries the span's trace
// context in the envelope (Envelope.Trace) to peers that announced the
// capability, and starts a handler span under the incoming context around
// every handler it runs; handlers' Contexts carry it, so calls made from a
// handler continue the trace. This package knows nothing of a tracing
// library: package otelzlink is the OpenTelemetry Tracer. Without a Tracer
// the request path pays one nil check and allocates nothing more.

// capTrace is the capability of a node that reads an envelope's trace
// context; a trace context goes only to peers that announced it (a
// version-1 reader without it refuses the extra field).
const capTrace = "trace-v1"

// Tracer starts spans for a MeshNode. Its methods run on the request path
// and must not block.
type Tracer interface {
	// StartCall starts the span of an outgoing request or one-way message
	// made under ctx (the span's parent when ctx carries one). It returns
	// the span (nil: none) and the trace context to carry in the envelope
	// ("", or longer than wire.MaxTraceLen: none), bytes in a string.
	StartCall(ctx context.Context, s SpanInfo) (Span, string)
	// StartHandler starts the span of a handler run (a request or one-way
	// handler, or a Spot turn) as a child of trace, the incoming trace
	// context ("": none). The handler runs with the context it returns,
	// derived from ctx (nil: ctx).
	StartHandler(ctx context.Context, trace string, s SpanInfo) (context.Context, Span)
}

// Span is one started span.
type Span interface {
	// End records the outcome (nil = ok; else the typed error the caller
	// sees) and ends the span. It is called once.
	End(err error)
}

// SpanKind says what a span stands for.
type SpanKind uint8

// Span kinds.
const (
	SpanCall     SpanKind = 1 + iota // a request, from its start to its one terminal result
	SpanSend                         // a one-way message, until it is queued
	SpanHandler                      // a request or one-way handler run
	SpanSpotTurn                     // a Spot turn (package spot)
)

var spanKindNames = [...]string{SpanCall: "call", SpanSend: "send", SpanHandler: "handler", SpanSpotTurn: "spot_turn"}

func (k SpanKind) String() string {
	if k >= SpanCall && k <= SpanSpotTurn {
		return spanKindNames[k]
	}
	return "span_kind"
}

// SpanInfo describes a span when it starts.
type SpanInfo struct {
	Kind SpanKind
	// Mesh is the MeshName.
	Mesh string
	// Channel is the ChannelName; "" for a Node-direct message.
	Channel string
	// Packet is the packet name (a Spot turn: the Spot's packet).
	Packet string
	// Target is the RID of the node the message goes to (calls, sends), or
	// of the node running the handler or turn.
	Target string
	// From is the calling node's RID (handlers, turns).
	From string
	// SpotKind and SpotID name the Spot of a turn.
	SpotKind, SpotID string
}

// SetTracer turns tracing on for the node (nil = off, the default).
func (b *MeshBuilder) SetTracer(t Tracer) *MeshBuilder { b.cfg.Tracer = t; return b }

// Tracer returns the node's Tracer (nil = tracing off); extensions start
// their own spans with it.
func (n *Node) Tracer() Tracer { return n.cfg.Tracer }

// startCall starts the span of e, sent to l under ctx, and puts its trace
// context in e when l reads it.
func (n *Node) startCall(t Tracer, ctx context.Context, l *link, e *wire.Envelope, kind SpanKind) Span {
	sp, tc := t.StartCall(ctx, SpanInfo{Kind: kind, Mesh: n.cfg.Mesh, Channel: e.Channel, Packet: e.Packet, Target: l.rid})
	if tc != "" && len(tc) <= wire.MaxTraceLen && (l.p == nil || l.trace) {
		e.Trace = tc
	}
	return sp
}

// tracedCall is call in a span.
func (n *Node) tracedCall(t Tracer, ctx context.Context, l *link, e wire.Envelope) ([]byte, error) {
	sp := n.startCall(t, ctx, l, &e, SpanCall)
	out, err := n.roundTrip(ctx, l, e)
	if sp != nil {
		sp.End(err)
	}
	return out, err
}

// tracedOneWay is submitOneWay in a span.
func (n *Node) tracedOneWay(t Tracer, ctx context.Context, l *link, e wire.Envelope) error {
	sp := n.startCall(t, ctx, l, &e, SpanSend)
	err := n.submitCtx(ctx, l, e)
	if sp != nil {
		sp.End(err)
	}
	return err
}

// tracedAsync ends an asynchronous call's span with its result, then the
// call.
type tracedAsync struct {
	a    *asyncCall
	span Span
}

func (t *tracedAsync) notify(r result) {
	t.span.End(r.err)
	t.a.notify(r)
}

// traceAsync starts the span of an asynchronous call a, sent to l under
// parent (nil: none), and returns what its table entry notifies.
func (n *Node) traceAsync(t Tracer, parent context.Context, a *asyncCall, l *link, e *wire.Envelope) notifier {
	if parent == nil {
		parent = context.Background()
	}
	sp := n.startCall(t, parent, l, e, SpanCall)
	if sp == nil {
		return a
	}
	return &tracedAsync{a: a, span: sp}
}

// CallAsyncContext is CallAsync whose call continues the trace ctx carries
// (a handler's or a Spot turn's context). Only ctx's values are used: the
// call's deadline is timeout, and ctx ending does not end it.
func (n *Node) CallAsyncContext(ctx context.Context, channel, packet string, payload []byte, timeout time.Duration, replyTo actors.ReplyTo, tag any) error {
	return n.callAsyncContext(ctx, channel, "", packet, payload, timeout, replyTo, tag)
}

// CallNodeAsyncContext is CallNodeAsync continuing ctx's trace; see
// CallAsyncContext.
func (n *Node) CallNodeAsyncContext(ctx context.Context, rid, packet string, payload []byte, timeout time.Duration, replyTo actors.ReplyTo, tag any) error {
	return n.callAsyncContext(ctx, "", rid, packet, payload, timeout, replyTo, tag)
}

// CallNodeFuncContext is CallNodeFunc whose call continues the trace ctx
// carries (nil: none); see CallAsyncContext.
func (n *Node) CallNodeFuncContext(ctx context.Context, rid, packet string, payload []byte, timeout time.Duration, fn func(Reply)) {
	n.callAsync(&asyncCall{fn: fn}, "", rid, packet, payload, timeout, ctx)
}

func (n *Node) callAsyncContext(ctx context.Context, channel, rid, packet string, payload []byte, timeout time.Duration, replyTo actors.ReplyTo, tag any) error {
	slot, err := replyTo.Reserve()
	if err != nil {
		return err
	}
	a := &asyncCall{slot: slot, tag: tag}
	n.callAsync(a, channel, rid, packet, payload, timeout, ctx)
	return nil
}

// startHandler starts the span of m's handler, when the node traces, and
// lets the handler's Context carry it.
func (n *Node) startHandler(m *inbound, hc *Context) Span {
	if t := n.cfg.Tracer; t != nil {
		return n.startHandlerSpan(t, m, hc)
	}
	return nil
}

func (n *Node) startHandlerSpan(t Tracer, m *inbound, hc *Context) Span {
	ctx, sp := t.StartHandler(hc.Context, m.env.Trace, SpanInfo{Kind: SpanHandler, Mesh: n.cfg.Mesh,
		Channel: hc.Channel, Packet: hc.Packet, Target: n.rid, From: hc.From})
	if ctx != nil {
		hc.Context = ctx
	}
	return sp
}

// traceRefused records the span of a request or send the node answered
// without running a handler (an unknown packet or channel, a busy or
// restarting owner), when it traces: the server side shows the refusal
// too, as the child of the caller's span.
func (n *Node) traceRefused(from *link, e *wire.Envelope, err error) {
	t := n.cfg.Tracer
	if t == nil {
		return
	}
	_, sp := t.StartHandler(n.hctx, e.Trace, SpanInfo{Kind: SpanHandler, Mesh: n.cfg.Mesh,
		Channel: e.Channel, Packet: e.Packet, Target: n.rid, From: from.rid})
	if sp != nil {
		endHandlerSpan(sp, err)
	}
}

// endSpan ends a handler's span with what its caller sees.
func endSpan(sp Span, err error) {
	if sp != nil {
		endHandlerSpan(sp, err)
	}
}

func endHandlerSpan(sp Span, err error) {
	if err != nil {
		err = handlerError(err)
	}
	sp.End(err)
}
