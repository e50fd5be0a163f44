package routemesh

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/wire"
)

// ownerActor owns one handler scope (the Node-direct scope of a MeshNode,
// or a channel) and runs its handlers. Its bounded mailbox is the
// admission: a full mailbox is ErrBusy to the caller, never a silent drop.
// Handlers run on up to cap(slots) goroutines at once; while all are busy
// the owner stops taking messages, so they wait in the mailbox, counted
// against its budgets (queued ≤ budget, running ≤ concurrency).
type ownerActor struct {
	n        *Node
	channel  string
	requests map[string]RequestHandler
	sends    map[string]SendHandler
	slots    chan struct{} // shared across restarts: running handlers
}

func (o *ownerActor) Receive(c actor.Context) {
	m, ok := c.Message().(*inbound)
	if !ok {
		return
	}
	select {
	case o.slots <- struct{}{}:
	case <-o.n.hctx.Done():
		// Stopping: answer instead of running.
		if m.env.Kind == wire.KindRequest {
			o.n.reply(m.from, wire.ErrorEnvelope(m.env.Corr, wire.ErrShuttingDown))
		}
		o.n.inflight.Add(-1)
		return
	}
	o.n.running.Add(1)
	go func() {
		defer o.n.running.Add(-1)
		defer func() { <-o.slots }()
		o.handle(m)
	}()
}

// handle runs one admitted message's handler and answers it.
func (o *ownerActor) handle(m *inbound) {
	defer o.n.inflight.Add(-1)
	e := &m.env
	hc := &Context{Channel: o.channel, Packet: e.Packet, From: m.from.rid}
	switch e.Kind {
	case wire.KindSend:
		h := o.sends[e.Packet]
		if h == nil {
			o.n.cnt.protocolErrors.Add(1)
			return
		}
		hc.Context = o.n.hctx
		o.runSend(h, hc, e.Payload)
	case wire.KindRequest:
		h := o.requests[e.Packet]
		if h == nil {
			o.n.reply(m.from, wire.ErrorEnvelope(e.Corr, fmt.Errorf("%w: %q", wire.ErrUnknownPacket, e.Packet)))
			return
		}
		ctx, cancel := context.WithTimeout(o.n.hctx, time.Duration(e.TimeoutMs)*time.Millisecond)
		hc.Context = ctx
		out, err := o.runRequest(h, hc, e.Payload)
		cancel()
		if err != nil {
			o.n.reply(m.from, wire.ErrorEnvelope(e.Corr, handlerError(err)))
			return
		}
		o.n.reply(m.from, wire.Envelope{Kind: wire.KindReply, Corr: e.Corr, Payload: out, Headroom: o.lowHeadroom()})
	}
}

// lowHeadroom reports this channel's headroom when it is low (under a
// quarter of the budget), so callers skip a full Server before it refuses;
// nil otherwise (no allocation on the common path).
func (o *ownerActor) lowHeadroom() map[string]uint32 {
	if o.channel == "" {
		return nil
	}
	co := o.n.channels[o.channel]
	if co == nil || co.ref == nil {
		return nil
	}
	st := co.ref.Quota().Stats()
	if st.MaxMessages <= 0 {
		return nil
	}
	h := quotaHeadroom(co.ref)
	if int64(h) >= st.MaxMessages/4 {
		return nil
	}
	return map[string]uint32{o.channel: h}
}

// runRequest calls h, turning a panic into an ErrHandler result so one bad
// request never takes the owner down.
func (o *ownerActor) runRequest(h RequestHandler, c *Context, payload []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			o.n.log.Error().Str("packet", c.Packet).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panicked")
			err = fmt.Errorf("%w: handler panicked: %v", wire.ErrHandler, r)
		}
	}()
	return h(c, payload)
}

func (o *ownerActor) runSend(h SendHandler, c *Context, payload []byte) {
	defer func() {
		if r := recover(); r != nil {
			o.n.log.Error().Str("packet", c.Packet).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panicked")
		}
	}()
	h(c, payload)
}

// handlerError keeps framework errors a handler returned (e.g. ErrBusy from
// a nested call) and marks everything else ErrHandler.
func handlerError(err error) error {
	if wire.CodeOf(err) != wire.CodeHandler {
		return err
	}
	return fmt.Errorf("%w: %w", wire.ErrHandler, err)
}
