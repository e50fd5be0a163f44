package routemesh

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/wire"
)

// A heartbeat allocates nothing at rest: the beat loop's tick (machine,
// envelope, control lane), the writer's encoding of it into its reused
// buffer, and the reader's applying of the peer's heartbeat. Measured with
// the writer's loop not running, so each step is counted alone.
func TestHeartbeatAllocatesNothing(t *testing.T) {
	cfg := DefaultConfig()
	n := &Node{cfg: &cfg, gen: 7, table: selection.NewTable()}
	n.beats.n = n
	n.v.Store(&view{state: NodeReady, revision: 3, weights: map[string]uint16{"echo": 10}, owners: nil})
	t0 := time.Unix(1_000_000, 0)
	n.beats.epoch = t0
	iv := cfg.Liveness.Interval

	p := &pipe{id: "p", node: n, closed: make(chan struct{})}
	p.w = newWriter(16, func([]byte) error { return nil }, func(error) {})
	p.link = &link{rid: "peer", gen: 9, p: p, full: map[string]*atomic.Bool{"echo": new(atomic.Bool)}}
	p.live = newPipeLive(cfg.Liveness, t0)
	p.state.Store(uint32(pipeReady))
	n.beats.mu.Lock()
	p.live.idx = 0
	n.beats.pipes = append(n.beats.pipes, p)
	n.beats.mu.Unlock()

	in := wire.Envelope{Kind: wire.KindHeartbeat, Generation: 9, Revision: 4, Servers: map[string]uint16{"echo": 1},
		Headroom: map[string]uint32{"echo": 5}, Seq: 1}
	p.link.knownRev.Store(4) // the table holds the peer's revision 4
	var (
		buf   []byte
		k     int
		sent  int
		batch = make([]wire.Envelope, 1)
		frame = &wire.Frame{Type: wire.FrameBatch, Batch: batch}
	)
	step := func() {
		k++
		now := t0.Add(time.Duration(k) * iv)
		n.applyControl(p, &in, now) // the peer's heartbeat, read
		n.beats.tick(now)           // ours, due at every tick
		p.w.mu.Lock()
		ctl := p.w.ctl
		p.w.ctl = ctl[:0]
		p.w.mu.Unlock()
		for i := range ctl {
			var err error
			batch[0] = ctl[i].env
			buf, err = wire.AppendFrame(buf[:0], frame)
			if err != nil {
				t.Fatal(err)
			}
			sent++
			ctl[i] = outItem{}
		}
	}
	step() // the lane and the buffer grow once
	before := sent
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Fatalf("a heartbeat allocates %.1f times; want 0", allocs)
	}
	if got := sent - before; got < 200 {
		t.Fatalf("%d heartbeats sent in 201 ticks; want one per tick", got)
	}
	if p.live.lost {
		t.Fatal("the peer was declared lost though it sent a heartbeat every tick")
	}
}
