package routemesh

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/wire"
)

// Reply is the one terminal result of an asynchronous call, delivered as
// a message to the actor that started it.
type Reply struct {
	// Tag is what the caller passed: its own correlation.
	Tag any
	// From is the RID that served the call ("" when no target was chosen).
	From string
	// Payload is the reply; nil when Err is set.
	Payload []byte
	// Err is nil, or an error matching the sentinels a blocking call ends
	// with (ErrTimeout included).
	Err error
}

// CallAsync is Call without waiting, for callers inside an actor: the call's
// one terminal result arrives as a *Reply (carrying tag) in replyTo's
// mailbox within timeout (0 = DefaultRequestTimeout). No goroutine waits for
// it. A slot for the reply is reserved in replyTo's mailbox first, so the
// reply is never refused: when no slot can be reserved (the mailbox is
// full, or the actor stopped) CallAsync returns that error, nothing is sent
// and no Reply will come. Otherwise it returns nil and exactly one Reply
// follows — errors that happen at once (no target, busy) included.
func (n *Node) CallAsync(channel, packet string, payload []byte, timeout time.Duration, replyTo *actors.Ref, tag any) error {
	slot, err := replyTo.Reserve()
	if err != nil {
		return err
	}
	n.callAsync(channel, "", packet, payload, timeout, func(r Reply) {
		r.Tag = tag
		slot.Post(&r)
	})
	return nil
}

// CallNodeAsync is CallNode without waiting; see CallAsync.
func (n *Node) CallNodeAsync(rid, packet string, payload []byte, timeout time.Duration, replyTo *actors.Ref, tag any) error {
	slot, err := replyTo.Reserve()
	if err != nil {
		return err
	}
	n.callAsync("", rid, packet, payload, timeout, func(r Reply) {
		r.Tag = tag
		slot.Post(&r)
	})
	return nil
}

// Future is the pending result of a call started by a goroutine that does
// not want to wait yet (to fan out several calls, say).
type Future struct {
	done chan struct{}
	r    Reply
}

// Done is closed once the result is there.
func (f *Future) Done() <-chan struct{} { return f.done }

// Wait returns the call's result, or ctx's error (as ErrCancelled or
// ErrTimeout) if ctx ends first; the call itself still ends on its own
// deadline.
func (f *Future) Wait(ctx context.Context) ([]byte, error) {
	select {
	case <-f.done:
		return f.r.Payload, f.r.Err
	case <-ctx.Done():
		return nil, ctxError(ctx.Err())
	}
}

// From is the RID that served the call, once Done.
func (f *Future) From() string {
	select {
	case <-f.done:
		return f.r.From
	default:
		return ""
	}
}

// CallFuture starts Call and returns at once; the Future ends within
// timeout (0 = DefaultRequestTimeout).
func (n *Node) CallFuture(channel, packet string, payload []byte, timeout time.Duration) *Future {
	f := &Future{done: make(chan struct{})}
	n.callAsync(channel, "", packet, payload, timeout, func(r Reply) { f.r = r; close(f.done) })
	return f
}

// CallNodeFuture starts CallNode and returns at once; see CallFuture.
func (n *Node) CallNodeFuture(rid, packet string, payload []byte, timeout time.Duration) *Future {
	f := &Future{done: make(chan struct{})}
	n.callAsync("", rid, packet, payload, timeout, func(r Reply) { f.r = r; close(f.done) })
	return f
}

// callAsync chooses the target (channel select-one, or rid), registers the
// call and submits it; deliver runs exactly once, on whichever goroutine
// ends the call (reply, peer loss, shutdown, the timeout's timer, or this
// one for an error at once). deliver must not block.
func (n *Node) callAsync(channel, rid, packet string, payload []byte, timeout time.Duration, deliver func(Reply)) {
	n.cnt.calls.Add(1)
	start := time.Now()
	end := func(r Reply) {
		if channel != "" {
			n.lat.observe(time.Since(start))
		}
		n.cnt.result(r.Err)
		deliver(r)
	}
	var l *link
	var err error
	if channel != "" {
		l, err = n.selectOne(channel)
	} else {
		l, err = n.directTarget(rid)
	}
	if err != nil {
		end(Reply{Err: err})
		return
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	e := wire.Envelope{Kind: wire.KindRequest, Channel: channel, Packet: packet, Payload: payload,
		TimeoutMs: uint32(min(timeout.Milliseconds()+1, int64(^uint32(0))))}
	corr := n.corr.Add(1)
	e.Corr = corr
	pipeID := ""
	if l.p != nil {
		pipeID = l.p.id
	}
	var timer atomic.Pointer[time.Timer]
	n.calls.addNotify(corr, pipeID, l.rid, func(r result) {
		if t := timer.Load(); t != nil {
			t.Stop()
		}
		if channel != "" && l.p != nil {
			if r.headroom != nil {
				l.setHeadroom(r.headroom)
			} else if b := l.full[channel]; b != nil && b.Load() {
				b.Store(false)
			}
		}
		end(Reply{From: l.rid, Payload: r.payload, Err: r.err})
	})
	timer.Store(time.AfterFunc(timeout, func() {
		if p := n.calls.take(corr); p != nil {
			p.finish(result{err: fmt.Errorf("%w: no reply from %s within %v", wire.ErrTimeout, l.rid, timeout)})
		}
	}))
	if err := n.submit(l, e); err != nil {
		if p := n.calls.take(corr); p != nil {
			p.finish(result{err: err})
		}
		return
	}
	// As in call: the pipe may have been dropped, or every pending call
	// failed for shutdown, between the target lookup and the registration.
	if lost, down := l.p != nil && l.p.getState() == pipeClosed, n.callsClosed.Load(); lost || down {
		if p := n.calls.take(corr); p != nil {
			err := fmt.Errorf("%w: %s: connection closed", wire.ErrPeerLost, l.rid)
			if down {
				err = wire.ErrShuttingDown
			}
			p.finish(result{err: err})
		}
	}
}
