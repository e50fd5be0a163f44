package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/wire"
)

// Reply is the one terminal result of an asynchronous call a Spot's turn
// started (Replies.Call, CallNode, CallSpot): it arrives as
// a message of the Spot and runs the kind's OnReply handler in a turn of
// its own, with the Tag the turn gave. Err matches the sentinels a
// blocking call ends with (ErrTimeout included).
type Reply = routemesh.Reply

// OnReply sets the handler of the replies to the asynchronous calls this
// kind's turns start, and returns what starts them: a kind without a reply
// handler has no *Replies, so it cannot start an asynchronous call (the
// type system, not a failure at call time, keeps every Reply handled).
//
//	var replies *spot.Replies // set before the kind is enabled
//	spot.On(room, askP, func(c *spot.Context, s *Room, r Ask) (Ack, error) {
//		return Ack{}, replies.CallSpot(c, "player", r.Player, "status", nil, time.Second, r.Player)
//	})
//	replies = room.OnReply(func(c *spot.Context, s *Room, r *spot.Reply) { ... })
func (k *Kind[S]) OnReply(f func(c *Context, s *S, r *Reply)) *Replies {
	if f == nil {
		k.refuse("kind %s: nil OnReply", k.reg.name)
		return &Replies{reg: k.reg}
	}
	k.reg.rawReply = func(c *Context, state any, r *Reply) { f(c, state.(*S), r) }
	k.reg.dispatchReplies()
	return &Replies{reg: k.reg}
}

// dispatchReplies makes onReply hand each Reply to the typed handler of
// its packet (OnReplyOf), else to the raw one (OnReply).
func (reg *kindReg) dispatchReplies() {
	reg.onReply = func(c *Context, state any, r *Reply) {
		if tt, ok := r.Tag.(*typedTag); ok {
			if h := reg.typedReplies[tt.packet]; h != nil {
				r.Tag = tt.tag
				h(c, state, r)
				return
			}
			r.Tag = tt.tag
		}
		if reg.rawReply != nil {
			reg.rawReply(c, state, r)
		}
	}
}

// typedTag carries a typed asynchronous call's packet with its tag.
type typedTag struct {
	packet string
	tag    any
}

// AsyncOf starts typed asynchronous calls of packet p from the turns of
// the kind whose OnReplyOf returned it; each call's one terminal result
// comes back to that handler, decoded, as a turn of its own.
type AsyncOf[Req, Resp any] struct {
	r *Replies
	p wire.Packet[Req, Resp]
}

// OnReplyOf sets the typed handler of the replies to packet p's
// asynchronous calls and returns what starts them. f gets the decoded
// reply, or the call's error (ErrBadPayload for a reply that does not
// decode), and the tag the turn gave.
func OnReplyOf[S, Req, Resp any](k *Kind[S], p wire.Packet[Req, Resp], f func(c *Context, s *S, resp Resp, err error, tag any)) *AsyncOf[Req, Resp] {
	if f == nil {
		k.refuse("kind %s: nil OnReplyOf for packet %s", k.reg.name, p.Name())
	} else {
		if k.reg.typedReplies == nil {
			k.reg.typedReplies = map[string]func(c *Context, state any, r *Reply){}
		}
		k.reg.typedReplies[p.Name()] = func(c *Context, state any, r *Reply) {
			var resp Resp
			err := r.Err
			if err == nil {
				resp, err = p.DecodeReply(r.Payload)
			}
			f(c, state.(*S), resp, err, r.Tag)
		}
		k.reg.dispatchReplies()
	}
	return &AsyncOf[Req, Resp]{r: &Replies{reg: k.reg}, p: p}
}

// CallSpot starts a typed request to the Spot (kind, id) (Replies.CallSpot).
func (a *AsyncOf[Req, Resp]) CallSpot(c *Context, kind, id string, req Req, timeout time.Duration, tag any) error {
	b, err := a.p.EncodeRequest(req)
	if err != nil {
		return err
	}
	return a.r.CallSpot(c, kind, id, a.p.Name(), b, timeout, &typedTag{packet: a.p.Name(), tag: tag})
}

// Call starts a typed channel request (Replies.Call).
func (a *AsyncOf[Req, Resp]) Call(c *Context, channel string, req Req, timeout time.Duration, tag any) error {
	b, err := a.p.EncodeRequest(req)
	if err != nil {
		return err
	}
	return a.r.Call(c, channel, a.p.Name(), b, timeout, &typedTag{packet: a.p.Name(), tag: tag})
}

// CallNode starts a typed Node-direct request to rid (Replies.CallNode).
func (a *AsyncOf[Req, Resp]) CallNode(c *Context, rid string, req Req, timeout time.Duration, tag any) error {
	b, err := a.p.EncodeRequest(req)
	if err != nil {
		return err
	}
	return a.r.CallNode(c, rid, a.p.Name(), b, timeout, &typedTag{packet: a.p.Name(), tag: tag})
}

// Replies starts asynchronous calls from the turns of the kind whose
// OnReply returned it; each call's one terminal result comes back to that
// OnReply as a turn of its own. Safe for concurrent use.
type Replies struct{ reg *kindReg }

// check refuses a Context that is not a turn of r's kind.
func (r *Replies) check(c *Context) error {
	if c == nil || c.act == nil || c.act.ref == nil {
		return fmt.Errorf("%w: an asynchronous call needs a Spot turn's Context", ErrConfig)
	}
	if c.ks.reg != r.reg {
		return fmt.Errorf("%w: a turn of kind %s starts calls whose replies go to kind %s", ErrConfig, c.Kind, r.reg.name)
	}
	return nil
}

// Call starts a channel request from the Spot's turn c without waiting:
// the turn goes on (and may end); the reply arrives later as a *Reply
// (carrying tag) handled by the kind's OnReply, within timeout (0 = the
// RouteMesh default). A slot for it is reserved in the Spot's mailbox
// first: when none can be had the call is not made and the error comes
// back at once; otherwise exactly one Reply follows.
func (r *Replies) Call(c *Context, channel, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := r.check(c); err != nil {
		return err
	}
	c.act.drain.owe()
	return c.act.drain.started(c.Node.CallAsyncContext(c.Context, channel, packet, payload, timeout, c.act.ref.ReplyTo(), c.replyTag(tag)))
}

// CallNode is Call for a Node-direct request to rid.
func (r *Replies) CallNode(c *Context, rid, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := r.check(c); err != nil {
		return err
	}
	c.act.drain.owe()
	return c.act.drain.started(c.Node.CallNodeAsyncContext(c.Context, rid, packet, payload, timeout, c.act.ref.ReplyTo(), c.replyTag(tag)))
}

// CallSpot is Call for a request to the Spot (kind, id): no turn waits on
// it, so it carries no call chain (the target may call this Spot back:
// that call just waits its turn).
func (r *Replies) CallSpot(c *Context, kind, id, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := r.check(c); err != nil {
		return err
	}
	rt := c.rt
	if !rt.valid(c.act, time.Now()) {
		return fmt.Errorf("%w: %s/%s lost its lease", ErrFenced, c.Kind, c.ID)
	}
	if timeout <= 0 {
		timeout = routemesh.DefaultRequestTimeout
	}
	c.act.drain.owe()
	slot, err := c.act.ref.Reserve()
	if err != nil {
		return c.act.drain.started(err)
	}
	sc := &spotCall{rt: rt, trace: rt.traceParent(c), slot: slot, tag: c.replyTag(tag), deadline: time.Now().Add(timeout), backoff: 10 * time.Millisecond}
	// No turn waits on it: the call carries no call chain.
	h, _, err := rt.request(rt.base, kind, id, packet, payload)
	if err != nil {
		sc.end(nil, Result{}, err)
		return nil
	}
	sc.h = h
	sc.step(rt.cached(kind, id))
	return nil
}

// spotCall is one asynchronous Spot call in flight: the blocking call's
// loop (callTo) turned into steps that run when each hop's answer
// arrives, so no goroutine waits for it. A hop that must back off, or a
// redirect, continues from a timer; only a call that finds no Object
// Server for its kind, or was answered "kind not hosted", waits for a
// fresh listing on a goroutine of its own (as long as that takes, bounded
// by the deadline).
type spotCall struct {
	rt       *runtime
	trace    context.Context // nil, or the turn's context: each hop continues its trace
	h        *header
	target   string
	deadline time.Time
	backoff  time.Duration
	slot     actors.Reservation
	tag      any
}

// step sends the call to target, or to the placement choice when "".
func (sc *spotCall) step(target string) {
	rt := sc.rt
	if target == "" {
		var ok bool
		if !sc.h.relist { // after "kind not hosted": a fresh listing first
			target, ok = rt.place(sc.h.kind, sc.h.id)
		}
		if !ok {
			if !rt.goStore(sc.placeFresh) {
				sc.end(nil, Result{}, fmt.Errorf("%w: spots stopping", ErrNoTarget))
			}
			return
		}
	}
	left := time.Until(sc.deadline)
	if left <= 0 {
		sc.end(nil, Result{}, sc.timeout())
		return
	}
	sc.target = target
	rt.n.CallNodeFuncContext(sc.trace, target, packetSpot, sc.h.encode(), left, sc.hop)
}

func (sc *spotCall) placeFresh() {
	ctx, cancel := context.WithDeadline(sc.rt.base, sc.deadline)
	defer cancel()
	target, ok := sc.rt.placeFor(ctx, sc.h)
	if !ok {
		sc.end(nil, Result{}, noServer(sc.h))
		return
	}
	sc.step(target)
}

// hop takes one hop's answer (on the goroutine that ended that call: it
// must not block).
func (sc *spotCall) hop(r routemesh.Reply) {
	next := sc.rt.afterHop(sc.h, sc.target, r.Payload, r.Err)
	if next.done {
		sc.end(next.body, next.res, next.err)
		return
	}
	var wait time.Duration
	if next.pause {
		wait, sc.backoff = sc.backoff, nextBackoff(sc.backoff)
	}
	if left := time.Until(sc.deadline); wait >= left {
		time.AfterFunc(max(left, 0), func() { sc.end(nil, Result{}, sc.timeout()) })
		return
	}
	time.AfterFunc(wait, func() { sc.step(next.target) })
}

func (sc *spotCall) timeout() error {
	return fmt.Errorf("%w: spot %s/%s", zerr.ErrTimeout, sc.h.kind, sc.h.id)
}

// end posts the one Reply into the slot reserved for it.
func (sc *spotCall) end(body []byte, res Result, err error) {
	sc.slot.Post(&Reply{Tag: sc.tag, From: res.Owner, Payload: body, Err: err})
}

// reply runs the kind's OnReply for one asynchronous result, as a turn —
// also while a drain's last turn waits for the replies the Spot is owed
// (drain.go), which it then ends after the last one. A reply no turn
// takes changes nothing (after a move it must not save: the record is the
// new owner's).
func (a *spotActor) reply(c *actors.Context, r *Reply) {
	defer a.act.checkQuiet() // a move may wait for this reply
	rt, reg := a.rt, a.ks.reg
	m := &a.act.drain
	if a.gone && !m.winding.Load() {
		return // after its last turn: counted with what it was owed (abandon)
	}
	m.took()
	if reg.onReply == nil || !rt.valid(a.act, time.Now()) {
		rt.stats.asyncAbandoned.Add(1)
		a.replied()
		return // the turn that asked is gone with its activation
	}
	if a.reread && a.reload() != nil {
		// The store cannot be read: go on from the state in memory (the
		// unknown save's change then counts as made).
		a.reread = false
	}
	a.turns++
	a.act.turn.Store(a.turns)
	ctx, cancel := context.WithTimeout(rt.base, routemesh.DefaultRequestTimeout)
	var sp routemesh.Span
	if tt, ok := r.Tag.(*tracedTag); ok {
		r.Tag = tt.tag
		ctx, sp = rt.startReplyTurn(ctx, tt.parent, a)
	}
	t := a.enter()
	hc := a.context(ctx, r.From, nil, t)
	hc.Source = SourceReply
	reg.onReply(hc, a.state, r)
	a.ks.turns.count(replyTurnPacket, SourceReply, nil)
	a.leave(c, t)
	endTurn(sp, nil)
	cancel()
	a.act.turn.Store(0)
	a.changed()
	a.replied()
}
