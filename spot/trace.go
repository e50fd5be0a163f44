package spot

import (
	"context"

	"github.com/zlink-go/zlink/routemesh"
)

// Tracing: when the node has a routemesh.Tracer, every Spot turn that runs
// a request or a one-way message is a span, a child of the caller's span
// (the trace context the request carried), and the turn's Context carries
// it, so calls made from the turn continue the trace.

// startTurn starts the span of d's turn (nil when the node does not trace)
// and returns the context the turn runs with.
func (rt *runtime) startTurn(ctx context.Context, ks *kindState, act *activation, d *delivery) (context.Context, routemesh.Span) {
	t := rt.n.Tracer()
	if t == nil {
		return ctx, nil
	}
	tctx, sp := t.StartHandler(ctx, d.r.Trace, routemesh.SpanInfo{Kind: routemesh.SpanSpotTurn, Mesh: rt.n.Mesh(),
		Packet: d.h.packet, Target: rt.n.RID(), From: d.r.From, SpotKind: ks.reg.name, SpotID: act.id})
	if tctx == nil {
		tctx = ctx
	}
	return tctx, sp
}

// startRoute starts the span of a call this node makes on a caller's
// behalf (CallViaRaw): a handler span under the caller's, so the hops it
// makes continue the trace.
func (rt *runtime) startRoute(ctx context.Context, r *routemesh.Request, h *header) (context.Context, routemesh.Span) {
	t := rt.n.Tracer()
	if t == nil {
		return ctx, nil
	}
	tctx, sp := t.StartHandler(ctx, r.Trace, routemesh.SpanInfo{Kind: routemesh.SpanHandler, Mesh: rt.n.Mesh(),
		Packet: r.Packet, Target: rt.n.RID(), From: r.From, SpotKind: h.kind, SpotID: h.id})
	if tctx == nil {
		tctx = ctx
	}
	return tctx, sp
}

// endTurn ends a turn's span with the error its caller gets.
func endTurn(sp routemesh.Span, err error) {
	if sp != nil {
		sp.End(err)
	}
}

// traceParent is what an asynchronous Spot call of c's turn continues:
// the turn's context when the node traces (its values only: the call has
// its own deadline), else nil.
func (rt *runtime) traceParent(c *Context) context.Context {
	if rt.n.Tracer() == nil {
		return nil
	}
	return c.Context
}

// tracedTag is the tag of an asynchronous call of a traced turn: the
// turn's own tag and its context, so that the OnReply turn the reply runs
// is a span in the same trace, under the turn that made the call.
type tracedTag struct {
	tag    any
	parent context.Context
}

// replyTag is the tag an asynchronous call of c's turn carries: tag, or a
// tracedTag when the node traces.
func (c *Context) replyTag(tag any) any {
	if c.rt.n.Tracer() == nil {
		return tag
	}
	return &tracedTag{tag: tag, parent: c.Context}
}

// startReplyTurn starts the span of an OnReply turn under parent (the
// turn that made the call); the turn keeps ctx's deadline and
// cancellation and parent's values.
func (rt *runtime) startReplyTurn(ctx, parent context.Context, a *spotActor) (context.Context, routemesh.Span) {
	t := rt.n.Tracer()
	if t == nil {
		return ctx, nil
	}
	tctx, sp := t.StartHandler(valuesOf{Context: ctx, values: parent}, "", routemesh.SpanInfo{Kind: routemesh.SpanSpotTurn,
		Mesh: rt.n.Mesh(), Packet: replyPacket, Target: rt.n.RID(), SpotKind: a.ks.reg.name, SpotID: a.act.id})
	if tctx == nil {
		tctx = ctx
	}
	return tctx, sp
}

// replyPacket names an OnReply turn in its span.
const replyPacket = "OnReply"

// valuesOf is Context with the values of values first (a trace's span),
// its own deadline and cancellation otherwise.
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any {
	if v := c.values.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
