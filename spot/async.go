package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// Reply is the one terminal result of an asynchronous call a Spot's turn
// started (Context.CallAsync, CallNodeAsync, CallSpotAsync): it arrives as
// a message of the Spot and runs the kind's OnReply handler in a turn of
// its own, with the Tag the turn gave. Err matches the sentinels a
// blocking call ends with (ErrTimeout included).
type Reply = routemesh.Reply

// OnReply sets the handler of the replies to the asynchronous calls this
// kind's turns start. A kind that starts asynchronous calls must set it.
func (k *Kind[S]) OnReply(f func(c *Context, s *S, r *Reply)) *Kind[S] {
	if f == nil {
		k.refuse("kind %s: nil OnReply", k.reg.name)
		return k
	}
	k.reg.onReply = func(c *Context, state any, r *Reply) { f(c, state.(*S), r) }
	return k
}

// asyncCheck refuses an asynchronous call the Spot could not take the
// reply of.
func (c *Context) asyncCheck() error {
	if c.act == nil || c.act.ref == nil {
		return fmt.Errorf("%w: an asynchronous call needs a Spot turn's Context", ErrConfig)
	}
	if c.reg().onReply == nil {
		return fmt.Errorf("%w: kind %s has no OnReply handler", ErrConfig, c.Kind)
	}
	return nil
}

func (c *Context) reg() *kindReg { return c.ks.reg }

// CallAsync starts a channel request from the Spot's turn without waiting:
// the turn goes on (and may end); the reply arrives later as a *Reply
// (carrying tag) handled by the kind's OnReply, within timeout (0 = the
// RouteMesh default). A slot for it is reserved in the Spot's mailbox
// first: when none can be had the call is not made and the error comes
// back at once; otherwise exactly one Reply follows.
func (c *Context) CallAsync(channel, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := c.asyncCheck(); err != nil {
		return err
	}
	return c.Node.CallAsync(channel, packet, payload, timeout, c.act.ref, tag)
}

// CallNodeAsync is CallAsync for a Node-direct request to rid.
func (c *Context) CallNodeAsync(rid, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := c.asyncCheck(); err != nil {
		return err
	}
	return c.Node.CallNodeAsync(rid, packet, payload, timeout, c.act.ref, tag)
}

// CallSpotAsync is CallAsync for a request to the Spot (kind, id): no turn
// waits on it, so it carries no call chain (the target may call this Spot
// back: that call just waits its turn).
func (c *Context) CallSpotAsync(kind, id, packet string, payload []byte, timeout time.Duration, tag any) error {
	if err := c.asyncCheck(); err != nil {
		return err
	}
	rt := c.rt
	if !rt.valid(c.act, time.Now()) {
		return fmt.Errorf("%w: %s/%s lost its lease", ErrFenced, c.Kind, c.ID)
	}
	if timeout <= 0 {
		timeout = routemesh.DefaultRequestTimeout
	}
	slot, err := c.act.ref.Reserve()
	if err != nil {
		return err
	}
	if !rt.goStore(func() {
		ctx, cancel := context.WithTimeout(rt.base, timeout)
		defer cancel()
		out, res, err := rt.call(ctx, kind, id, packet, payload)
		slot.Post(&Reply{Tag: tag, From: res.Owner, Payload: out, Err: err})
	}) {
		slot.Post(&Reply{Tag: tag, Err: fmt.Errorf("%w: spots stopping", ErrNoTarget)})
	}
	return nil
}

// reply runs the kind's OnReply for one asynchronous result, as a turn.
func (a *spotActor) reply(r *Reply) {
	rt, reg := a.rt, a.ks.reg
	if a.gone || reg.onReply == nil || !rt.valid(a.act, time.Now()) {
		return // the turn that asked is gone with its activation
	}
	a.turns++
	a.act.turn.Store(a.turns)
	ctx, cancel := context.WithTimeout(rt.base, routemesh.DefaultRequestTimeout)
	reg.onReply(a.context(ctx, r.From, nil), a.state, r)
	cancel()
	a.act.turn.Store(0)
}
