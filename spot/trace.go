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
// behalf (CallVia): a handler span under the caller's, so the hops it
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
