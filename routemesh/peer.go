package routemesh

import (
	"context"
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
)

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

func (a *peerActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		if a.p.getState() == pipeClosed {
			a.lost = true
			return
		}
		a.self = a.n.sys.Self(c)
		mesh, p := a.mesh, a.p
		if _, err := a.n.sys.SpawnChild(c, actors.Spec{Name: "writer", Kind: "writer",
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
	}
}

func (a *peerActor) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
	}
}

func (a *peerActor) reportLost(reason error) {
	if !a.lost {
		a.lost = true
		_ = a.mesh.Tell(&peerLost{p: a.p, reason: reason})
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
	a.timer = time.AfterFunc(d, func() { _ = self.Tell(&peerTick{}) })
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
		a.l.draining.Store(e.Draining)
		a.l.setHeadroom(e.Headroom)
		a.memberUpdate(e)
	case wire.KindWeightUpdate:
		a.live.FrameReceived(now)
		a.memberUpdate(e)
	case wire.KindDrain:
		a.live.FrameReceived(now)
		a.l.draining.Store(e.Draining)
	case wire.KindGoodbye:
		a.reportLost(fmt.Errorf("%w: peer said goodbye", wire.ErrPeerLost))
	default:
		a.live.FrameReceived(now)
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
	_ = a.mesh.Tell(&memberUpdate{p: a.p, gen: e.Generation, rev: e.Revision, servers: e.Servers})
}

// stopAsync asks an actor to stop without waiting for it.
func stopAsync(r *actors.Ref) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.Stop(ctx)
}
