package routemesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/routemesh/internal/liveness"
	"github.com/zlink-go/zlink/wire"
)

// Messages of a peer actor.
type (
	peerTick   struct{}
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

// peerActor runs one ready connection's liveness machine and applies the
// peer's control envelopes (heartbeat, drain, goodbye). The wire is read by
// a separate goroutine, so a slow handler never delays heartbeats.
//
// It reports to the mesh actor and writes nothing of the node's: Server
// sets go to the mesh actor as memberUpdate (applied only while its pipe
// is current); only the link's own hints (draining, capacity) are stored
// on the link. A restart ends the pipe: the old incarnation tells the
// mesh actor the peer is lost (pending calls end with ErrPeerLost, the
// intent reconnects); the new one stays idle until the mesh actor stops it.
type peerActor struct {
	n     *Node
	mesh  *actors.Ref
	p     *pipe
	l     *link
	self  *actors.Ref
	live  *liveness.Machine
	seq   uint64
	timer *time.Timer
	lost  bool
}

func newPeerActor(n *Node, mesh *actors.Ref, p *pipe, l *link) *peerActor {
	return &peerActor{n: n, mesh: mesh, p: p, l: l}
}

var _ actors.FailureHandler = (*peerActor)(nil)

func (a *peerActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		if a.p.getState() == pipeClosed {
			a.lost = true
			return
		}
		a.self = a.n.sys.Self(c)
		mesh, p := a.mesh, a.p
		if _, err := a.n.sys.SpawnChild(c, actors.Spec{Name: "writer", Kind: "writer", MaxMessages: ownedMailboxMessages,
			Producer: func() actor.Actor { return &writerActor{n: a.n, mesh: mesh, p: p} }}); err != nil {
			panic(err)
		}
		now := time.Now()
		lc := a.n.cfg.Liveness
		a.live = liveness.New(liveness.Config{Interval: lc.Interval, MaxGap: lc.MaxGap, LastHeard: lc.LastHeard}, now)
		a.tick(now)
	case *actor.Restarting:
		a.stopTimer()
		a.reportLost(fmt.Errorf("%w: peer actor restarted", wire.ErrPeerLost))
		a.lost = true
	case *actor.Stopping:
		a.stopTimer()
	case *peerTick:
		if a.live != nil {
			a.tick(time.Now())
		}
	case *controlEnv:
		if a.live != nil {
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
	a.stopTimer()
	a.lost = true
	_ = a.mesh.TellControl(&peerLost{p: a.p, reason: &peerVerdict{err: reason}})
}

func (a *peerActor) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
	}
}

func (a *peerActor) reportLost(reason error) {
	if !a.lost {
		a.lost = true
		_ = a.mesh.TellControl(&peerLost{p: a.p, reason: &peerVerdict{err: reason}})
	}
}

func (a *peerActor) tick(now time.Time) {
	if a.lost {
		return
	}
	if last := a.p.lastRead.Load(); last != 0 {
		a.live.FrameReceived(time.Unix(0, last))
	}
	out := a.live.Tick(now)
	if out.Lost {
		a.reportLost(fmt.Errorf("%w: liveness: %s", wire.ErrPeerLost, out.Reason))
		return
	}
	if out.SendHeartbeat {
		a.seq++
		hb := a.n.heartbeat(a.seq)
		if a.p.w.control(outItem{env: hb}) == nil {
			a.live.HeartbeatSent(now)
		}
	}
	d := time.Until(out.Next)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	self := a.self
	a.timer = time.AfterFunc(d, func() { _ = self.TellControl(&peerTick{}) })
}

func (a *peerActor) control(e *wire.Envelope) {
	now := time.Now()
	switch e.Kind {
	case wire.KindHeartbeat:
		if e.Generation != 0 && e.Generation != a.l.gen {
			a.n.cnt.lateFrames.Add(1)
			return
		}
		a.live.HeartbeatReceived(now)
		a.setDraining(e.Draining)
		a.l.setHeadroom(e.Headroom)
		a.memberUpdate(e)
	case wire.KindWeightUpdate:
		a.live.FrameReceived(now)
		a.memberUpdate(e)
	case wire.KindDrain:
		a.live.FrameReceived(now)
		a.setDraining(e.Draining)
	case wire.KindGoodbye:
		a.reportLost(fmt.Errorf("%w: %w", wire.ErrPeerLost, errGoodbye))
	default:
		a.live.FrameReceived(now)
	}
}

// setDraining records the peer's drain flag; a change wakes WaitReady.
func (a *peerActor) setDraining(d bool) {
	if a.l.draining.Swap(d) != d {
		a.n.viewChanged()
	}
}

// memberUpdate hands the peer's Server set to the mesh actor, the
// table's only writer; a revision it already has is not sent again.
func (a *peerActor) memberUpdate(e *wire.Envelope) {
	if e.Revision == 0 || e.Generation != a.l.gen {
		return
	}
	if m, ok := a.n.table.Snapshot().Member(a.l.rid); ok && m.Generation == e.Generation && m.Revision >= e.Revision {
		return
	}
	_ = a.mesh.TellControl(&memberUpdate{p: a.p, gen: e.Generation, rev: e.Revision, servers: e.Servers})
}

// stopAsync asks an actor to stop without waiting for it.
func stopAsync(r *actors.Ref) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.Stop(ctx)
}
