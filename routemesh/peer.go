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
	peerStart  struct{ self *actors.Ref }
	peerTick   struct{}
	controlEnv struct{ env wire.Envelope }
)

// peerActor runs one ready connection's liveness machine and applies the
// peer's control envelopes (heartbeat, drain, goodbye). The wire is read by
// a separate goroutine, so a slow handler never delays heartbeats.
type peerActor struct {
	n     *Node
	p     *pipe
	l     *link
	self  *actors.Ref
	live  *liveness.Machine
	seq   uint64
	timer *time.Timer
	lost  bool
}

func newPeerActor(n *Node, p *pipe, l *link) *peerActor {
	return &peerActor{n: n, p: p, l: l}
}

func (a *peerActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *peerStart:
		a.self = msg.self
		now := time.Now()
		lc := a.n.cfg.Liveness
		a.live = liveness.New(liveness.Config{Interval: lc.Interval, MaxGap: lc.MaxGap, LastHeard: lc.LastHeard}, now)
		a.tick(now)
	case *peerTick:
		if a.live != nil {
			a.tick(time.Now())
		}
	case *controlEnv:
		a.control(&msg.env)
	case *actor.Stopping:
		if a.timer != nil {
			a.timer.Stop()
		}
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
		a.lost = true
		_ = a.n.ref.Tell(&peerLost{p: a.p, reason: fmt.Errorf("%w: liveness: %s", wire.ErrPeerLost, out.Reason)})
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
		a.n.applyMember(a.l, e.Generation, e.Revision, e.Servers)
	case wire.KindWeightUpdate:
		a.live.FrameReceived(now)
		a.n.applyMember(a.l, e.Generation, e.Revision, e.Servers)
	case wire.KindDrain:
		a.live.FrameReceived(now)
		a.l.draining.Store(e.Draining)
	case wire.KindGoodbye:
		if !a.lost {
			a.lost = true
			_ = a.n.ref.Tell(&peerLost{p: a.p, reason: fmt.Errorf("%w: peer said goodbye", wire.ErrPeerLost)})
		}
	default:
		a.live.FrameReceived(now)
	}
}

// stopAsync asks an actor to stop without waiting for it.
func stopAsync(r *actors.Ref) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.Stop(ctx)
}
