package routemesh

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// A heartbeat allocates nothing at rest, whether the beat loop writes it
// at once (the socket takes it: no goroutine) or queues it for the
// writer's loop (the loop starts, encodes, sends and ends when idle); nor
// does the reader's decoding and applying of the peer's heartbeat (its
// maps refilled in place: the same channels each time).
func TestHeartbeatAllocatesNothing(t *testing.T) {
	for _, atOnce := range []bool{true, false} {
		name := "queued"
		if atOnce {
			name = "written at once"
		}
		t.Run(name, func(t *testing.T) { heartbeatAllocs(t, atOnce) })
	}
}

func heartbeatAllocs(t *testing.T, atOnce bool) {
	n, p, sent, t0 := beatsRig(t, 1)
	if atOnce {
		p.w.try = func(msg []byte) (bool, error) {
			sent <- len(msg) - transport.HeaderRoom
			return true, nil
		}
	}
	n.v.Store(&view{state: NodeReady, revision: 3, weights: map[string]uint16{"echo": 10}, owners: nil})
	iv := n.cfg.Liveness.Interval

	in := wire.Envelope{Kind: wire.KindHeartbeat, Generation: 9, Revision: 4, Servers: map[string]uint16{"echo": 1},
		Headroom: map[string]uint32{"echo": 5}, Seq: 1}
	p.link.knownRev.Store(4) // the table holds the peer's revision 4
	raw, err := wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameBatch, Batch: []wire.Envelope{in}})
	if err != nil {
		t.Fatal(err)
	}
	k, frames := 0, 0
	idle := func() bool {
		p.w.mu.Lock()
		defer p.w.mu.Unlock()
		return p.w.idle
	}
	step := func() {
		k++
		now := t0.Add(time.Duration(k) * iv)
		n.onFrame(p, raw) // the peer's heartbeat, read: decoded and applied
		n.beats.tick(now) // ours, due at every tick
		if <-sent > 0 {
			frames++
		}
		for !idle() { // the loop ends once the lanes are empty
			runtime.Gosched()
		}
	}
	step()           // the lanes, the batch and the buffer grow once
	if raceEnabled { // the pooled decode memory is dropped at random
		for range 201 {
			step()
		}
	} else if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Fatalf("a heartbeat allocates %.1f times; want 0", allocs)
	}
	if frames != 202 {
		t.Fatalf("%d heartbeats sent in 202 ticks; want one per tick", frames)
	}
	if p.live.lost {
		t.Fatal("the peer was declared lost though it sent a heartbeat every tick")
	}
	if p.live.m.Gap() > 1 {
		t.Fatalf("gap %d after a heartbeat each way every tick", p.live.m.Gap())
	}
}

// The beat loop starts before the mesh actor publishes the node's first
// view; a tick that comes first (a loaded machine: a 128-node bench in one
// process hit it) sends nothing and does not panic, and a registered pipe
// gets its heartbeat at the first tick after the view exists.
func TestBeats_TickBeforeTheFirstView(t *testing.T) {
	n, p, sent, t0 := beatsRig(t, 4) // no view yet
	iv := n.cfg.Liveness.Interval

	n.beats.tick(t0.Add(iv)) // no view yet
	select {
	case f := <-sent:
		t.Fatalf("a %d-byte frame sent before the node had a view", f)
	default:
	}
	n.v.Store(&view{state: NodeReady, revision: 1, weights: map[string]uint16{}})
	n.beats.tick(t0.Add(2 * iv))
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat at the first tick with a view")
	}
	p.w.stop()
}

// beatsRig is a node without a mesh actor (no view: the test stores one)
// whose beat loop drives one ready pipe "p" to peer "peer" (channel
// "echo"); the pipe's writer sends each frame's length to sent (buffer
// size) and starts idle, so the first heartbeat starts its loop.
func beatsRig(t *testing.T, size int) (*Node, *pipe, chan int, time.Time) {
	cfg := DefaultConfig()
	n := &Node{cfg: &cfg, gen: 7, table: selection.NewTable(), calls: newCallTable()}
	n.beats.n = n
	t0 := time.Unix(1_000_000, 0)
	n.beats.epoch = t0
	p := &pipe{id: "p", node: n, closed: make(chan struct{})}
	sent := make(chan int, size)
	p.w = newWriter(16, func(f []byte) error { sent <- len(f); return nil }, func(err error) { t.Error(err) })
	p.w.idle = true
	p.link = &link{rid: "peer", gen: 9, p: p, full: map[string]*atomic.Bool{"echo": new(atomic.Bool)}}
	p.live = newPipeLive(cfg.Liveness, t0)
	p.state.Store(uint32(pipeReady))
	n.beats.mu.Lock()
	p.live.idx = 0
	n.beats.pipes = append(n.beats.pipes, p)
	n.beats.mu.Unlock()
	return n, p, sent, t0
}

// The beat loop's ticks are on the wall clock's grid of its Interval: two
// nodes started at different moments (in one process or on hosts whose
// clocks agree) beat at the same instants, so a process reads its peers'
// heartbeats in one wake-up rather than one each. The first tick is the
// next grid point after the start, never in the past.
func TestBeats_TicksOnTheWallClockGrid(t *testing.T) {
	iv := 500 * time.Millisecond
	base := time.Unix(1_700_000_000, 0) // on every grid of a whole second
	for _, off := range []time.Duration{0, time.Nanosecond, 123 * time.Millisecond, iv - time.Nanosecond, 7*iv + 42*time.Microsecond} {
		now := base.Add(off)
		e := beatEpoch(now, iv)
		if e.After(now) || now.Sub(e) >= iv {
			t.Fatalf("start +%v: epoch %v is not the last grid point at or before it", off, e)
		}
		if e.UnixNano()%int64(iv) != 0 {
			t.Fatalf("start +%v: epoch %v is off the %v grid", off, e, iv)
		}
		cfg := DefaultConfig()
		cfg.Liveness.Interval = iv
		n := &Node{cfg: &cfg}
		b := &beats{n: n, epoch: e}
		next := b.nextTick(now)
		if !next.After(now) || next.Sub(now) > iv || next.UnixNano()%int64(iv) != 0 {
			t.Fatalf("start +%v: next tick %v", off, next)
		}
	}
	// Monotonic: the epoch keeps now's monotonic reading (a later wall
	// clock step does not move the ticks).
	now := time.Now()
	if e := beatEpoch(now, iv); e.Sub(now) > 0 || now.Sub(e) >= iv || e.String() == e.Round(0).String() {
		t.Fatalf("epoch %v of %v lost the monotonic reading or left the interval", e, now)
	}
}
