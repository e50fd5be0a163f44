package routemesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// CallNode sends a Node-direct request to the MeshNode rid of this mesh and
// waits for its one terminal result: the reply, or an error matching
// ErrNoTarget, ErrTimeout, ErrBusy, ErrPeerLost, ErrTooLarge, ErrHandler,
// ErrCancelled or ErrShuttingDown. rid may be this node's own RID: the call
// then goes through the same admission, correlation and completion.
func (n *Node) CallNode(ctx context.Context, rid, packet string, payload []byte) ([]byte, error) {
	n.cnt.calls.Add(1)
	l, err := n.directTarget(rid)
	if err != nil {
		n.cnt.result(err)
		return nil, err
	}
	out, err := n.call(ctx, l, wire.Envelope{Kind: wire.KindRequest, Packet: packet, Payload: payload})
	n.cnt.result(err)
	return out, err
}

// SendNode sends a one-way Node-direct message. It ends when the message is
// queued for the peer (or refused); there is no reply.
func (n *Node) SendNode(ctx context.Context, rid, packet string, payload []byte) error {
	n.cnt.calls.Add(1)
	l, err := n.directTarget(rid)
	if err == nil {
		err = n.submitOneWay(ctx, l, wire.Envelope{Kind: wire.KindSend, Packet: packet, Payload: payload})
	}
	n.cnt.result(err)
	return err
}

func (n *Node) directTarget(rid string) (*link, error) {
	v := n.load()
	if err := v.refusal(n); err != nil {
		return nil, err
	}
	var l *link
	if rid == n.rid {
		l = n.self
	} else {
		l = v.links[rid]
	}
	if l == nil {
		return nil, fmt.Errorf("%w: no ready MeshNode %q in mesh %s", zerr.ErrNoTarget, rid, n.cfg.Mesh)
	}
	if l.objectRole == uint8(ObjectClient) {
		return nil, fmt.Errorf("%w: MeshNode %q is an Object Client", zerr.ErrNoTarget, rid)
	}
	return l, nil
}

// submit hands an envelope to a link: the peer's writer, or for the local
// node the same owner admission the reader uses for remote envelopes.
func (n *Node) submit(l *link, e wire.Envelope) error {
	if err := wire.CheckLimit(e.Size(), l.recvLimit); err != nil {
		return err
	}
	if l.p == nil {
		return n.deliver(n.self, &e)
	}
	return l.p.w.submit(e)
}

func (n *Node) submitOneWay(ctx context.Context, l *link, e wire.Envelope) error {
	if t := n.cfg.Tracer; t != nil {
		return n.tracedOneWay(t, ctx, l, e)
	}
	return n.submitCtx(ctx, l, e)
}

func (n *Node) submitCtx(ctx context.Context, l *link, e wire.Envelope) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", zerr.ErrCancelled, err)
	}
	return n.submit(l, e)
}

// call registers a correlation id, submits, and waits for exactly one
// terminal result (in a span when the node traces).
func (n *Node) call(ctx context.Context, l *link, e wire.Envelope) ([]byte, error) {
	if t := n.cfg.Tracer; t != nil {
		return n.tracedCall(t, ctx, l, e)
	}
	return n.roundTrip(ctx, l, e)
}

// roundTrip is call without tracing.
func (n *Node) roundTrip(ctx context.Context, l *link, e wire.Envelope) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	// A context with a deadline wakes us by itself; a call without one is
	// ended by the call table at the default timeout (no timer per call).
	var wait time.Duration
	var now int64
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		wait = time.Until(deadline)
		if wait <= 0 {
			return nil, fmt.Errorf("%w: %w", zerr.ErrTimeout, context.DeadlineExceeded)
		}
	} else {
		wait = DefaultRequestTimeout
		now = n.calls.now()
	}
	e.TimeoutMs = uint32(min(wait.Milliseconds()+1, int64(^uint32(0))))
	corr := n.corr.Add(1)
	e.Corr = corr
	pipeID := ""
	if l.p != nil {
		pipeID = l.p.id
	}
	var p *pending
	if hasDeadline {
		p = n.calls.add(corr, pipeID, l.rid)
	} else {
		p = n.calls.addTimed(corr, pipeID, l.rid, now, wait)
	}
	if err := n.submit(l, e); err != nil {
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			return nil, err
		}
		// Completed concurrently (peer lost, shutdown): take that result.
		r := <-p.done
		n.calls.release(p)
		return r.payload, r.err
	}
	// The pipe may have been dropped (and its calls failed) between the
	// target lookup and our registration, or the node may have failed every
	// pending call for shutdown: then nobody else will end this one.
	if lost, down := l.p != nil && l.p.getState() == pipeClosed, n.callsClosed.Load(); lost || down {
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			if down {
				return nil, zerr.ErrShuttingDown
			}
			return nil, fmt.Errorf("%w: %s: connection closed", zerr.ErrPeerLost, l.rid)
		}
	}
	var r result
	select {
	case r = <-p.done:
	case <-ctx.Done():
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			return nil, ctxError(ctx.Err())
		}
		r = <-p.done
	}
	n.calls.release(p)
	if r.expired {
		return nil, r.err
	}
	if e.Channel != "" && l.p != nil {
		if r.headroom != nil {
			l.setHeadroom(r.headroom)
		} else if b := l.full[e.Channel]; b != nil && b.Load() {
			b.Store(false)
		}
	}
	return r.payload, r.err
}

func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", zerr.ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", zerr.ErrCancelled, err)
}
