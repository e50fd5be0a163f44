package routemesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// Messages of a peer actor.
type (
	controlEnv struct{ env wire.Envelope }
	// peerClosed is the mesh actor's news that the ready pipe's socket
	// failed or closed. It goes through the peer actor so that a goodbye
	// the reader queued before the close is applied first: the peer then
	// reports one verdict (departed or lost) back to the mesh actor.
	peerClosed struct{ reason error }
	// peerClosedLate is peerClosed again, after closeGrace.
	peerClosedLate struct{ reason error }
)

// closeGrace is how long the peer actor of an inbound connection waits,
// after the mesh actor reports the socket closed, before it calls the
// peer lost: the ROUTER reports a closed connection apart from its
// frames, so a goodbye read just before the close may still be on its way
// to this actor. Pending calls on the pipe end with ErrPeerLost at the
// verdict, so at most this much later.
const closeGrace = 50 * time.Millisecond

// errGoodbye marks a clean departure: the peer said goodbye before it
// closed the connection. It is counted as peers_departed, not peers_lost.
var errGoodbye = errors.New("peer said goodbye")

// peerVerdict is a reason reported by the peer actor itself (liveness,
// goodbye, restart, or a close it has ordered after its control
// envelopes); the mesh actor drops the pipe on it at once.
type peerVerdict struct{ err error }

func (e *peerVerdict) Error() string { return e.err.Error() }
func (e *peerVerdict) Unwrap() error { return e.err }

// peerActor stands for one ready connection: it registers the pipe with
// the node's heartbeat loop (heartbeat.go), which runs its liveness
// machine, and reports the pipe's end — a goodbye, a liveness loss, the
// socket's close — to the mesh actor, once. Heartbeats, weight updates
// and drain flags are applied by the pipe's reader (applyControl); the
// wire is read by a separate goroutine, so a slow handler never delays
// heartbeats.
//
// It reports to the mesh actor and writes nothing of the node's: Server
// sets go to the mesh actor as memberUpdate (applied only while its pipe
// is current); only the link's own hints (draining, capacity) are stored
// on the link. A restart ends the pipe: the old incarnation tells the
// mesh actor the peer is lost (pending calls end with ErrPeerLost, the
// intent reconnects); the new one stays idle until the mesh actor stops it.
type peerActor struct {
	n    *Node
	mesh *actors.Ref
	p    *pipe
	l    *link
	self *actors.Ref
	// registered: the pipe is in the heartbeat loop (until Stopping).
	registered bool
	lost       bool
}

func newPeerActor(n *Node, mesh *actors.Ref, p *pipe, l *link) *peerActor {
	return &peerActor{n: n, mesh: mesh, p: p, l: l}
}

var _ actors.FailureHandler = (*peerActor)(nil)

func (a *peerActor) Receive(c *actors.Context) {
	switch msg := c.Message().(type) {
	case *actors.Started:
		if a.p.getState() == pipeClosed {
			a.lost = true
			return
		}
		a.self = c.Self()
		mesh, p := a.mesh, a.p
		if _, err := c.Spawn(actors.Spec{Name: "writer", Kind: "writer", MaxMessages: ownedMailboxMessages,
			Producer: func() actors.Actor { return &writerActor{n: a.n, mesh: mesh, p: p} }}); err != nil {
			panic(err)
		}
		a.registered = true
		a.n.beats.add(p)
	case *actors.Restarting:
		a.unregister()
		a.reportLost(fmt.Errorf("%w: peer actor restarted", zerr.ErrPeerLost))
		a.lost = true
	case *actors.Stopping:
		a.unregister()
	case *peerLiveLost:
		if a.registered {
			a.reportLost(msg.reason)
		}
	case *controlEnv:
		if a.registered {
			a.control(&msg.env)
		}
	case *peerClosed:
		if a.p.outbound || a.lost || a.self == nil {
			// An outbound pipe's reader delivers its frames and then the
			// close, in order: anything sent before is already applied.
			a.closed(msg.reason)
			return
		}
		self, reason := a.self, msg.reason
		time.AfterFunc(closeGrace, func() {
			if self.TellControl(&peerClosedLate{reason: reason}) != nil {
				_ = a.mesh.TellControl(&peerLost{p: a.p, reason: &peerVerdict{err: reason}})
			}
		})
	case *peerClosedLate:
		a.closed(msg.reason)
	}
}

// MessageFailed and MessageDropped make sure a close the mesh actor handed
// over still drops the pipe when this actor cannot handle it.
func (a *peerActor) MessageFailed(msg any)  { a.release(msg) }
func (a *peerActor) MessageDropped(msg any) { a.release(msg) }

func (a *peerActor) release(msg any) {
	switch m := msg.(type) {
	case *peerClosed:
		a.closed(m.reason)
	case *peerClosedLate:
		a.closed(m.reason)
	}
}

// closed reports the pipe's socket close, unless a verdict (a goodbye, a
// liveness loss) was already reported; then the mesh actor drops the pipe
// on that one and ignores the repeat.
func (a *peerActor) closed(reason error) {
	a.unregister()
	a.lost = true
	_ = a.mesh.TellControl(&peerLost{p: a.p, reason: &peerVerdict{err: reason}})
}

// unregister takes the pipe out of the heartbeat loop.
func (a *peerActor) unregister() {
	if a.registered {
		a.registered = false
		a.n.beats.remove(a.p)
	}
}

func (a *peerActor) reportLost(reason error) {
	if !a.lost {
		a.lost = true
		_ = a.mesh.TellControl(&peerLost{p: a.p, reason: &peerVerdict{err: reason}})
	}
}

// control applies a control envelope the reader left to the actor: a
// goodbye, or a kind applyControl does not know (it still counts as
// hearing from the peer).
func (a *peerActor) control(e *wire.Envelope) {
	if e.Kind == wire.KindGoodbye {
		a.reportLost(fmt.Errorf("%w: %w", zerr.ErrPeerLost, errGoodbye))
		return
	}
	a.p.live.heard(false, time.Now())
}

// stopAsync asks an actor to stop without waiting for it.
func stopAsync(r *actors.Ref) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.Stop(ctx)
}
