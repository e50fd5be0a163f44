package routemesh

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zlink-go/zlink/wire"
)

// TestCallTable_QueueInOrderAndOutOfOrder registers calls with one timeout
// (in deadline order: the shards' queues) and a few with a shorter one (out
// of order: the heaps), ends most of them early in random order (holes and
// compaction in the queues), and checks that each of the rest ends once,
// by its deadline, and that the table is empty afterwards.
func TestCallTable_QueueInOrderAndOutOfOrder(t *testing.T) {
	tab := newCallTable()
	const calls = 4000
	rng := rand.New(rand.NewPCG(1, 2))
	ps := make([]*pending, calls)
	timeouts := make([]time.Duration, calls)
	// The timeouts outlast registering and ending the early calls (tens of
	// milliseconds, more on a loaded machine under -race): an early call
	// that expired first would make complete report a false failure.
	for i := range ps {
		timeouts[i] = 2 * time.Second
		if i%50 == 49 {
			timeouts[i] = time.Second // due before the queued ones
		}
		ps[i] = tab.addTimed(uint64(i+1), "pipe", "rid", tab.now(), timeouts[i])
	}
	order := rng.Perm(calls)
	early := map[int]bool{}
	for _, i := range order[:calls*9/10] {
		early[i] = true
		if !tab.complete(uint64(i+1), result{payload: []byte("ok")}) {
			t.Fatalf("call %d ended before its reply", i)
		}
	}
	for i, p := range ps {
		select {
		case r := <-p.done:
			if early[i] != (r.err == nil) || (!early[i] && (!errors.Is(r.err, wire.ErrTimeout) || !r.expired)) {
				t.Fatalf("call %d (early %v): %v", i, early[i], r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d never ended", i)
		}
		select {
		case <-p.done:
			t.Fatalf("call %d ended twice", i)
		default:
		}
	}
	for i := range tab.shards {
		s := &tab.shards[i]
		s.mu.Lock()
		if s.byCorr.len() != 0 || len(s.heap) != 0 || s.flive != 0 || len(s.fifo) != 0 {
			t.Fatalf("shard %d holds %d entries, heap %d, queue %d live of %d", i, s.byCorr.len(), len(s.heap), s.flive, len(s.fifo))
		}
		s.mu.Unlock()
	}
}

// TestCorrIndex_SlotsOverflowAndResize checks the index against a map: ids
// in sequence with a few old ones held (their slots collide with newer
// ids), growth, shrinking after a burst, and removeIf.
func TestCorrIndex_SlotsOverflowAndResize(t *testing.T) {
	var x corrIndex
	want := map[uint64]*pending{}
	put := func(corr uint64) {
		p := &pending{corr: corr}
		x.put(p)
		want[corr] = p
	}
	take := func(corr uint64) {
		if got := x.take(corr); got != want[corr] {
			t.Fatalf("take(%d) = %p, want %p", corr, got, want[corr])
		}
		delete(want, corr)
	}
	held := []uint64{16, 32} // stay in while the ids wrap around the slots
	for _, c := range held {
		put(c)
	}
	var next uint64 = 48
	for range 20000 { // a window of 200 calls, ids of one shard (step 16)
		put(next)
		if c := next - 200*16; c > 32 {
			take(c)
		}
		next += 16
	}
	if x.take(1<<40) != nil || x.take(17) != nil {
		t.Fatal("an absent id was found")
	}
	for c := next - 200*16; c < next; c += 16 { // the burst ends
		take(c)
	}
	if x.len() != len(want) || len(x.slots) > keptCorrSlots {
		t.Fatalf("len %d (want %d), %d slots", x.len(), len(want), len(x.slots))
	}
	for c := range want {
		if x.take(c) == nil {
			t.Fatalf("id %d lost", c)
		}
	}
	for c := uint64(0); c < 1000; c += 16 {
		put(c)
	}
	odd := x.removeIf(func(p *pending) bool { return p.corr%32 == 16 }, nil)
	if len(odd) != 31 || x.len() != 32 {
		t.Fatalf("removeIf took %d, left %d; want 31 and 32", len(odd), x.len())
	}
}
