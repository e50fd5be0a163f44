package routemesh

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/liveness"
	"github.com/zlink-go/zlink/wire"
)

// Heartbeats. Every ready pipe runs its own liveness machine and sends its
// own heartbeats, but no pipe has a timer: one goroutine per node (the
// beat loop) wakes once per Liveness.Interval, asks each pipe's machine
// whether a heartbeat is due or the peer is lost, and writes the due
// heartbeats (or queues them on the pipes' control lanes, below). A
// heartbeat read from a peer is applied on the reader's goroutine
// (applyControl): no actor hop, no allocation. At rest a node of N peers
// thus wakes its beat loop twice a second and its readers once per
// heartbeat read, instead of three goroutine hand-offs per heartbeat (a
// timer, the peer actor, the writer).
//
// The machine of a pipe is a small leaf: its lock is held only to feed or
// read it, never across a send that can block or a message to an actor.
// The loop writes a heartbeat itself when the pipe's writer is idle and
// the socket takes it at once (a write that never blocks, TLS excepted);
// otherwise the heartbeat is queued for the writer's goroutine.

// pipeLive is one pipe's liveness state.
type pipeLive struct {
	mu   sync.Mutex
	m    *liveness.Machine
	seq  uint64
	lost bool // reported lost: ticks stop
	idx  int  // position in beats.pipes; -1 when not registered (beats.mu)
}

func newPipeLive(cfg LivenessConfig, now time.Time) *pipeLive {
	return &pipeLive{m: liveness.New(liveness.Config{Interval: cfg.Interval, MaxGap: cfg.MaxGap, LastHeard: cfg.LastHeard}, now), idx: -1}
}

// heard feeds a control envelope of the peer into the machine.
func (pl *pipeLive) heard(heartbeat bool, now time.Time) {
	pl.mu.Lock()
	if heartbeat {
		pl.m.HeartbeatReceived(now)
	} else {
		pl.m.FrameReceived(now)
	}
	pl.mu.Unlock()
}

// beats is the node's beat loop and the pipes it drives.
type beats struct {
	n       *Node
	mu      sync.Mutex
	pipes   []*pipe
	running bool
	epoch   time.Time // ticks are at epoch + k×Interval

	// The loop's own (no lock): the pipes of one tick, and the headroom
	// map last sent (shared, read-only, by the heartbeats queued with it).
	batch    []*pipe
	headroom map[string]uint32
	// one holds the heartbeat being written without blocking, frame its
	// encoding (writer.tryBeat).
	one   [1]wire.Envelope
	frame []byte
}

// start starts the loop (at the node's start: a cost of the node, not of
// its peers).
func (b *beats) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.startLocked()
}

func (b *beats) startLocked() {
	if !b.running {
		b.epoch = beatEpoch(time.Now(), b.n.cfg.Liveness.Interval)
		b.running = b.n.goTracked(b.run)
	}
}

// beatEpoch is the last multiple of iv on the wall clock at or before now,
// kept on now's monotonic clock: the loop ticks at epoch + k×iv. Every
// node whose clock is close and whose Interval is the same thus beats at
// the same instants, so the heartbeats a process receives from all its
// peers arrive together and are read in one wake-up of the process
// instead of one each, spread over the Interval; in a process of many
// nodes all their beat loops wake once. The monotonic ticks do not
// follow later steps of the wall clock: alignment is a saving, never a
// condition of correctness.
func beatEpoch(now time.Time, iv time.Duration) time.Time {
	return now.Add(-now.Sub(now.Truncate(iv)))
}

// add registers a ready pipe and sends its first heartbeat at once.
func (b *beats) add(p *pipe) {
	n := b.n
	b.mu.Lock()
	if p.live.idx < 0 {
		p.live.idx = len(b.pipes)
		b.pipes = append(b.pipes, p)
	}
	b.startLocked()
	now := time.Now()
	at := b.lastTick(now)
	b.mu.Unlock()
	// Due at once (the machine is new); recorded as sent at the last
	// tick, so the next one goes with the loop's next tick.
	b.beat(p, now, at, n.heartbeat(0), false)
}

// remove unregisters p (its peer actor stopped). Idempotent.
func (b *beats) remove(p *pipe) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := p.live.idx
	if i < 0 {
		return
	}
	last := len(b.pipes) - 1
	b.pipes[i] = b.pipes[last]
	b.pipes[i].live.idx = i
	b.pipes[last] = nil
	b.pipes = b.pipes[:last]
	p.live.idx = -1
}

// lastTick is the last scheduled tick at or before now (b.mu held).
func (b *beats) lastTick(now time.Time) time.Time {
	iv := b.n.cfg.Liveness.Interval
	k := now.Sub(b.epoch) / iv
	return b.epoch.Add(k * iv)
}

// run is the beat loop: one wake per Interval, at the epoch's grid, until
// the node stops.
func (b *beats) run() {
	b.mu.Lock()
	next := b.nextTick(time.Now())
	b.mu.Unlock()
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	for {
		select {
		case <-b.n.ctx.Done():
			return
		case now := <-t.C:
			b.tick(now)
			b.mu.Lock()
			next = b.nextTick(time.Now())
			b.mu.Unlock()
			t.Reset(time.Until(next))
		}
	}
}

// nextTick is the first scheduled tick after now (b.mu held).
func (b *beats) nextTick(now time.Time) time.Time {
	return b.lastTick(now).Add(b.n.cfg.Liveness.Interval)
}

// tick checks every registered pipe at the tick's scheduled time (so that
// a heartbeat sent at one tick is due at the next, whatever the loop's
// delay) and queues the due heartbeats.
func (b *beats) tick(now time.Time) {
	b.mu.Lock()
	at := b.lastTick(now)
	b.batch = append(b.batch[:0], b.pipes...)
	b.mu.Unlock()
	n := b.n
	v := n.load()
	if v == nil {
		// The loop starts before the mesh actor publishes the first view;
		// on a loaded machine its first tick can come before that (no
		// pipe is ready then: nothing is due).
		return
	}
	hb := wire.Envelope{Kind: wire.KindHeartbeat, Generation: n.gen, Revision: v.revision,
		Servers: v.weights, Headroom: b.headroomNow(v), Draining: v.state == NodeDraining}
	for i, p := range b.batch {
		b.beat(p, at, at, hb, true)
		b.batch[i] = nil
	}
}

// headroomNow returns the node's headroom map, the one last sent when no
// entry changed (the common case at rest): heartbeats share one map, read
// only.
func (b *beats) headroomNow(v *view) map[string]uint32 {
	if h := b.headroom; h != nil && len(h) == len(v.owners) {
		same := true
		for name, ref := range v.owners {
			if cur, ok := h[name]; !ok || cur != headroomOf(v, ref) {
				same = false
				break
			}
		}
		if same {
			return h
		}
	}
	b.headroom = b.n.headroom(v)
	return b.headroom
}

// beat runs p's machine at check: a heartbeat (hb with p's sequence
// number), recorded as sent at sent, when one is due; the peer actor told
// when the peer is lost. From the loop (loop set) an idle writer's
// heartbeat is written at once when the socket takes it without blocking
// (writer.tryBeat), else queued on its control lane.
func (b *beats) beat(p *pipe, check, sent time.Time, hb wire.Envelope, loop bool) {
	if p.getState() != pipeReady {
		return
	}
	pl := p.live
	pl.mu.Lock()
	if pl.lost {
		pl.mu.Unlock()
		return
	}
	if last := p.lastRead.Load(); last != 0 {
		pl.m.FrameReceived(time.Unix(0, last))
	}
	out := pl.m.Tick(check)
	if out.Lost {
		pl.lost = true
		pl.mu.Unlock()
		if l := p.link; l != nil && l.peer != nil {
			_ = l.peer.TellControl(&peerLiveLost{reason: fmt.Errorf("%w: liveness: %s", zerr.ErrPeerLost, out.Reason)})
		}
		return
	}
	if out.SendHeartbeat {
		pl.seq++
		hb.Seq = pl.seq
		if b.send(p, &hb, loop) {
			pl.m.HeartbeatSent(sent)
		}
	}
	pl.mu.Unlock()
}

// send writes or queues the heartbeat hb on p (pl.mu held: the write, if
// any, never blocks). It reports whether hb went out or is queued.
func (b *beats) send(p *pipe, hb *wire.Envelope, loop bool) bool {
	if loop {
		b.one[0] = *hb
		sent, done := p.w.tryBeat(b.one[:], &b.frame)
		b.one[0] = wire.Envelope{}
		if done {
			return sent
		}
	}
	return p.w.control(outItem{env: *hb}) == nil
}

// peerLiveLost is the beat loop's news that a pipe's liveness machine
// declared the peer lost.
type peerLiveLost struct{ reason error }

// applyControl applies a control envelope read from a ready pipe on the
// reader's goroutine: heartbeats, weight updates and drain flags feed the
// pipe's liveness machine and the link's hints. A goodbye (and any other
// kind) goes to the peer actor, in order with the pipe's close.
func (n *Node) applyControl(p *pipe, e *wire.Envelope, now time.Time) bool {
	l := p.link
	switch e.Kind {
	case wire.KindHeartbeat:
		if e.Generation != 0 && e.Generation != l.gen {
			n.cnt.lateFrames.Add(1)
			return true
		}
		p.live.heard(true, now)
		n.setDraining(l, e.Draining)
		l.setHeadroom(e.Headroom)
		n.memberUpdate(p, e)
	case wire.KindWeightUpdate:
		p.live.heard(false, now)
		n.memberUpdate(p, e)
	case wire.KindDrain:
		p.live.heard(false, now)
		n.setDraining(l, e.Draining)
	default:
		return false
	}
	return true
}

// setDraining records the peer's drain flag; a change wakes WaitReady.
func (n *Node) setDraining(l *link, d bool) {
	if l.draining.Swap(d) != d {
		n.viewChanged()
	}
}

// memberUpdate hands the peer's Server set to the mesh actor, the
// table's only writer; a revision it already has is not sent again.
func (n *Node) memberUpdate(p *pipe, e *wire.Envelope) {
	l := p.link
	if e.Revision == 0 || e.Generation != l.gen || e.Revision <= l.knownRev.Load() {
		return
	}
	if n.table.Snapshot().Knows(l.rid, e.Generation, e.Revision) {
		l.knownRev.Store(e.Revision) // applied: later heartbeats stop here
		return
	}
	// A heartbeat's map belongs to the reader's decode memory: the mesh
	// actor gets a copy.
	_ = n.mesh().TellControl(&memberUpdate{p: p, gen: e.Generation, rev: e.Revision, servers: maps.Clone(e.Servers)})
}
