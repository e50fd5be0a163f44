package routemesh

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// inbound is a request or send admitted into an owner's mailbox. It also
// carries the handler's Context and deadline, so a request costs one
// allocation here.
type inbound struct {
	env  wire.Envelope
	from *link
	hc   Context
	dc   deadlineCtx
	// kept: the owner queued it in its handler pool, which took its
	// mailbox budget over (see mailbox.BudgetKeeper).
	kept bool
}

// KeptBudget implements mailbox.BudgetKeeper.
func (m *inbound) KeptBudget() bool { return m.kept }

// Size is what the owner's byte budget counts.
func (m *inbound) Size() int { return m.env.Size() }

// deliver admits a request or send into its owner. A refusal answers a
// remote request with an Error envelope (ErrBusy) and is returned for a
// local one, so both callers see the same terminal result.
func (n *Node) deliver(from *link, e *wire.Envelope) error {
	return n.deliverAt(from, e, time.Time{})
}

// deliverAt is deliver for an envelope that arrived at (zero: the handler
// reads the clock when it starts); a request's deadline counts from then.
func (n *Node) deliverAt(from *link, e *wire.Envelope, at time.Time) error {
	v := n.load()
	owner, err := n.ownerFor(v, e.Channel)
	if err == nil && v.paused {
		err = fmt.Errorf("%w: admission paused: %d handlers are hung", zerr.ErrBusy, v.hung)
		owner = nil
	}
	if owner != nil {
		n.work.add()
		if h := n.deferredFor(e); h != nil {
			n.runDeferred(h, from, e, at)
			return nil
		}
		err = owner.Tell(&inbound{env: *e, from: from, dc: deadlineCtx{deadline: at}})
		if err != nil {
			n.work.done()
			err = n.admissionError(err)
		}
	}
	if err == nil {
		return nil
	}
	n.traceRefused(from, e, err)
	if from.p != nil && e.Kind == wire.KindRequest {
		_ = from.p.w.control(outItem{env: wire.ErrorEnvelope(e.Corr, err)})
	}
	return err
}

// admissionError maps an owner's refusal to the caller-visible result: a
// full mailbox is ErrBusy (the same result a remote refusal gives); a
// stopped owner is ErrShuttingDown while the node stops, else ErrBusy (the
// owner is being restarted: the message was not run).
func (n *Node) admissionError(err error) error {
	var full *mailbox.FullError
	if errors.As(err, &full) {
		return fmt.Errorf("%w: %s", zerr.ErrBusy, full.Error())
	}
	if errors.Is(err, actors.ErrStopped) {
		if r := n.load().refusal(n); r != nil {
			return r
		}
		return errOwnerRestarting
	}
	return err
}

// errOwnerRestarting answers a message whose owner is being restarted: it
// was not run, so the caller may retry it.
var errOwnerRestarting = fmt.Errorf("%w: the handler owner is restarting", zerr.ErrBusy)

func (n *Node) ownerFor(v *view, channel string) (*actors.Ref, error) {
	if channel == "" {
		if v.direct == nil {
			return nil, errOwnerRestarting
		}
		return v.direct, nil
	}
	if ref := v.owners[channel]; ref != nil {
		return ref, nil
	}
	if co := n.channels[channel]; co != nil && co.role == RoleServer {
		return nil, errOwnerRestarting
	}
	return nil, fmt.Errorf("%w: %w: %s", zerr.ErrNoTarget, ErrUnknownChannel, channel)
}

// reply sends a reply or error envelope back to the caller's link. A reply
// larger than the caller's stated receive limit is refused here (the call
// ends ErrTooLarge): sending it would make the caller's transport close the
// whole connection.
func (n *Node) reply(to *link, e wire.Envelope) {
	if to.p == nil {
		n.complete(n.rid, &e)
		return
	}
	if err := wire.CheckLimit(e.Size(), to.recvLimit); err != nil {
		e = wire.ErrorEnvelope(e.Corr, fmt.Errorf("reply: %w", err))
	}
	_ = to.p.w.control(outItem{env: e})
}

// replyPayload is reply for a successful request's Reply envelope, with
// small frames (see ownerActor.handle): the envelope is built where it is
// queued.
func (n *Node) replyPayload(to *link, corr uint64, payload []byte, headroom map[string]uint32) {
	if to.p == nil || !to.p.w.controlReply(corr, payload, headroom, to.recvLimit) {
		n.replySlow(to, corr, payload, headroom)
	}
}

// replySlow is replyPayload's local or over-limit case.
//
//go:noinline
func (n *Node) replySlow(to *link, corr uint64, payload []byte, headroom map[string]uint32) {
	n.reply(to, wire.Envelope{Kind: wire.KindReply, Corr: corr, Payload: payload, Headroom: headroom})
}

// complete ends a pending call from a Reply or Error envelope.
func (n *Node) complete(from string, e *wire.Envelope) { n.completeAt(from, e, 0) }

// completeAt is complete for an envelope that arrived at (table clock).
func (n *Node) completeAt(from string, e *wire.Envelope, at int64) {
	r := result{from: from, headroom: e.Headroom, at: at}
	if e.Kind == wire.KindError {
		r.err = wire.ErrorOf(e.Code, string(e.Payload))
	} else {
		r.payload = e.Payload
	}
	if !n.calls.complete(e.Corr, r) {
		n.cnt.lateFrames.Add(1)
	}
}

// readRouter reads every inbound pipe of the listener (the ROUTER).
func (n *Node) readRouter() {
	for {
		id, frame, err := n.ln.Recv()
		if err != nil {
			if errors.Is(err, transport.ErrMalformed) {
				n.cnt.protocolErrors.Add(1)
				continue
			}
			if n.ctx.Err() != nil || errors.Is(err, transport.ErrClosed) {
				return
			}
			continue
		}
		n.routerFrame(id, frame)
	}
}

// routerFrame handles one frame read from an inbound connection.
func (n *Node) routerFrame(id string, frame []byte) {
	if v, ok := n.inbnd.Load(id); ok {
		n.onFrame(v.(*pipe), frame)
		return
	}
	f, err := wire.DecodeFrame(frame)
	if err == nil && f.Type != wire.FrameHello {
		err = fmt.Errorf("%w: the first frame is %v, not Hello", zerr.ErrProtocol, f.Type)
	}
	if err != nil {
		// A connection that does not open with a Hello is no peer: it is
		// told why (Reject version or protocol) and closed.
		n.cnt.protocolErrors.Add(1)
		_ = n.ln.Send([]byte(id), undecodableReject(err))
		n.ln.Disconnect(id)
		return
	}
	if err := n.mesh().Tell(&inboundHello{id: id, hello: f.Hello}); err != nil {
		n.cnt.handshakeRejects.Add(1)
		n.ln.Disconnect(id) // no pipe will let its identity go
	}
}

// onRouterFrame is routerFrame on the goroutine that read the inbound
// connection (transport.Events.OnFrame). A panic there is the listener
// actor's failure, as one in readRouter is.
func (n *Node) onRouterFrame(id string, frame []byte, err error) {
	if !n.routerOpen.Load() {
		select {
		case <-n.routerReady:
		case <-n.ctx.Done():
			return
		}
	}
	defer func() {
		if r := recover(); r != nil {
			gp := &goroutinePanic{value: r, stack: debug.Stack()}
			n.log.Error().Interface("panic", r).Msg("inbound reader panicked")
			if ref := n.listener.Load(); ref == nil || ref.TellControl(gp) != nil {
				n.fail(gp)
			}
		}
	}()
	if err != nil {
		n.cnt.protocolErrors.Add(1)
		return
	}
	n.routerFrame(id, frame)
}

// readConn reads one outbound pipe.
func (n *Node) readConn(p *pipe) {
	for {
		frame, err := p.conn.Recv()
		if err != nil {
			if errors.Is(err, transport.ErrMalformed) {
				n.cnt.protocolErrors.Add(1)
				continue
			}
			_ = n.mesh().TellControl(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", zerr.ErrPeerLost, err)})
			return
		}
		n.onFrame(p, frame)
		if p.getState() == pipeClosed {
			return
		}
	}
}

// onFrame handles one frame read from a pipe: batches of a ready pipe are
// dispatched here; anything else goes to the mesh actor in order.
func (n *Node) onFrame(p *pipe, raw []byte) {
	now := time.Now() // one clock read per frame: liveness, deadlines, latency
	p.lastRead.Store(now.UnixNano())
	// The frame and its batch are decoded into pooled memory: a ready
	// pipe's batch is done with once dispatched (every envelope is copied
	// or read there), and goes back to the pool. A frame handed to the mesh
	// actor keeps its memory (it is not returned).
	fb := frameBufs.Get().(*frameBuf)
	f := &fb.f
	if err := wire.DecodeFrameReusing(f, raw, fb.batch, &fb.maps); err != nil {
		// Not pooled again: the failed decode may have left references
		// anywhere in the batch array.
		n.cnt.protocolErrors.Add(1)
		if p.getState() == pipeHandshake {
			_ = p.w.control(outItem{frame: undecodableReject(err)}) // goes out before the close
		}
		_ = n.mesh().TellControl(&pipeFailed{p: p, err: err})
		return
	}
	if cap(f.Batch) > cap(fb.batch) {
		fb.batch = f.Batch[:0]
	}
	switch p.getState() {
	case pipeReady:
		if f.Type == wire.FrameBatch {
			n.dispatchAt(p, f.Batch, now)
			fb.put()
			return
		}
	case pipeClosed:
		fb.put()
		n.cnt.lateFrames.Add(1)
		return
	}
	hf := &handshakeFrame{p: p, f: f}
	if p.outbound || f.Type == wire.FrameBatch {
		// Wait until the mesh actor has applied it, so a batch that follows
		// the handshake is never dispatched before the pipe is ready (the
		// arbiter's first batch makes a follower's inbound pipe ready).
		hf.done = make(chan struct{})
	}
	if err := n.mesh().Tell(hf); err != nil {
		return
	}
	if hf.done != nil {
		select {
		case <-hf.done:
		case <-p.closed:
		case <-n.ctx.Done():
		}
	}
}

// frameBuf is a decoded frame's memory, pooled across frames and readers.
type frameBuf struct {
	f     wire.Frame
	batch []wire.Envelope // array the batches are decoded into
	// maps are the heartbeats' Servers and Headroom maps, refilled by the
	// next decode: applying a heartbeat reads them, and whatever keeps
	// one copies it (memberUpdate).
	maps wire.Maps
}

var frameBufs = sync.Pool{New: func() any { return new(frameBuf) }}

// maxPooledBatch bounds the batch array a pooled frameBuf keeps (envelopes).
const maxPooledBatch = 4096

// put returns fb to the pool, dropping every reference the last frame held
// (payloads alias the frame's bytes). Only the envelopes the last batch
// used can hold any: the array is zero beyond them.
func (fb *frameBuf) put() {
	clear(fb.f.Batch)
	fb.f = wire.Frame{}
	if cap(fb.batch) > maxPooledBatch {
		fb.batch = nil
	}
	frameBufs.Put(fb)
}

// dispatch hands a ready pipe's envelopes to their owners.
func (n *Node) dispatch(p *pipe, envs []wire.Envelope) { n.dispatchAt(p, envs, time.Now()) }

// dispatchAt is dispatch for envelopes that arrived at now.
func (n *Node) dispatchAt(p *pipe, envs []wire.Envelope, now time.Time) {
	l := p.link
	at := n.calls.at(now)
	for i := range envs {
		e := &envs[i]
		switch e.Kind {
		case wire.KindRequest, wire.KindSend:
			_ = n.deliverAt(l, e, now)
		case wire.KindReply, wire.KindError:
			n.completeAt(l.rid, e, at)
		default:
			if !n.applyControl(p, e, now) && l.peer != nil {
				_ = l.peer.Tell(&controlEnv{env: *e})
			}
		}
	}
}
