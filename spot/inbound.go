package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh"
)

// delivery is one Spot request or send admitted on this node, on its way
// to the Spot's actor.
type delivery struct {
	r *routemesh.Request
	h header
	// admitted is the size admitted against the Spot's budgets while it
	// waits in the reentry queue (0 elsewhere: the mailbox counts it).
	admitted int64
	// deferred is set when the handler left the request open (Defer).
	deferred *openReq
}

// Size is what the Spot's byte budget counts.
func (d *delivery) Size() int { return len(d.r.Payload) + 64 }

// inbound is the deferred Node-direct handler of every Spot request and
// send: it decodes, finds the activation and hands the request over
// without waiting for the turn.
func inbound(r *routemesh.Request) {
	rt, err := of(r.Node())
	if err != nil {
		r.Fail(err)
		return
	}
	rt.inbound(r)
}

func (rt *runtime) inbound(r *routemesh.Request) {
	h, err := decodeHeader(r.Payload)
	if err != nil {
		rt.answer(r, &h, errorReply(err))
		return
	}
	if h.flags&flagRoute != 0 && !r.OneWay {
		rt.route(r, h)
		return
	}
	d := &delivery{r: r, h: h}
	ks := rt.kinds[h.kind]
	switch {
	case rt.role != routemesh.ObjectServer || rt.stopping.Load():
		// Never hosts: answer with the owner it knows.
		rt.stats.redirects.Add(1)
		rt.answer(r, &h, redirectReply(rt.cache.get(h.kind, h.id), 0))
		return
	case ks == nil:
		// Not hosted here: never runs; the caller lists the mesh again.
		rt.stats.notHosted.Add(1)
		rt.answer(r, &h, notHostedReply(rt.n.RID(), h.kind))
		return
	}
	if h.flags&(flagsControl|flagHandoff) != 0 {
		rt.toKind(ks, d) // moves are the kind actor's business
		return
	}
	var cycle, reenter bool
	var check func(*activation) bool // only a call made from a turn can close a cycle
	if len(h.chain) > 0 {
		check = func(act *activation) bool {
			cycle = act.waitsOn(h.chain)
			reenter = cycle && ks.reg.reentrant
			return !cycle
		}
	}
	_, handled, err := ks.dir.route(h.id, check, func(act *activation) error {
		if reenter {
			return nil
		}
		return act.ref.Tell(d)
	})
	switch {
	case handled && cycle && reenter:
		if act := ks.dir.get(h.id); act != nil {
			rt.reenter(ks, act, d)
			return
		}
		rt.answer(r, &h, retryReply("the Spot is closing"))
	case handled && cycle:
		rt.answer(r, &h, errorReply(fmt.Errorf("%w: %s/%s is waiting on this call", ErrCycle, h.kind, h.id)))
	case handled && err != nil:
		rt.answer(r, &h, errorReply(fmt.Errorf("%w: spot %s/%s: %w", zerr.ErrBusy, h.kind, h.id, err)))
	case handled:
	default:
		rt.toKindCounted(ks, d) // counted as slow by route
	}
}

// toKind hands a delivery to the kind actor (activation, or a Spot being
// deactivated or restarted).
func (rt *runtime) toKind(ks *kindState, d *delivery) {
	ks.dir.countSlow(d.h.id)
	rt.toKindCounted(ks, d)
}

// toKindCounted is toKind for a delivery already counted as slow: the kind
// actor uncounts it once it has queued it (or ended it).
func (rt *runtime) toKindCounted(ks *kindState, d *delivery) {
	ref := ks.ref.Load()
	if ref == nil {
		ks.dir.slowDone(d.h.id)
		rt.answer(d.r, &d.h, retryReply("spots restarting"))
		return
	}
	if err := ref.Tell(&activate{d: d}); err != nil {
		ks.dir.slowDone(d.h.id)
		rt.answer(d.r, &d.h, errorReply(fmt.Errorf("%w: spot kind %s: %w", zerr.ErrBusy, ks.reg.name, err)))
	}
}

// answer ends a request with a Spot reply. A one-way message that reached
// a non-owner is forwarded once to the owner named; otherwise a send's
// outcome goes nowhere (counted when it was not delivered).
func (rt *runtime) answer(r *routemesh.Request, h *header, rep []byte) {
	if !r.OneWay {
		r.Reply(rep)
		return
	}
	defer r.Reply(nil)
	if len(rep) == 0 || rep[0] == stOK {
		return
	}
	if rep[0] == stRedirect && h.hops == 0 && h.kind != "" && h.flags&(flagsControl|flagHandoff) == 0 {
		if dec, err := decodeReply(rep); err == nil && dec.owner != "" && dec.owner != rt.n.RID() {
			fwd := *h
			fwd.hops = 1
			ctx, cancel := context.WithTimeout(rt.base, time.Second)
			// The forward continues the sender's trace: a routing span
			// here, the forwarded send its child.
			ctx, sp := rt.startRoute(ctx, r, h)
			err := rt.n.SendNode(ctx, dec.owner, packetSpot, fwd.encode())
			endTurn(sp, err)
			cancel()
			if err == nil {
				return
			}
		}
	}
	rt.stats.sendsDropped.Add(1)
}

// route makes a call on the sender's behalf (flagRoute) on a tracked
// goroutine, bounded by the sender's deadline.
func (rt *runtime) route(r *routemesh.Request, h header) {
	if rt.role != routemesh.ObjectServer {
		r.Reply(redirectReply("", 0))
		return
	}
	h.flags &^= flagRoute
	ok := rt.goStore(func() {
		ctx, cancel := context.WithDeadline(rt.base, r.Deadline)
		defer cancel()
		ctx, sp := rt.startRoute(ctx, r, &h)
		out, res, err := rt.callTo(ctx, &h, rt.cached(h.kind, h.id))
		endTurn(sp, err)
		if err != nil {
			r.Reply(errorReply(err))
			return
		}
		r.Reply(routedReply(res.Owner, res.Epoch, out))
	})
	if !ok {
		r.Reply(errorReply(zerr.ErrShuttingDown))
	}
}
