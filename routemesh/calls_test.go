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
	for i := range ps {
		timeouts[i] = 300 * time.Millisecond
		if i%50 == 49 {
			timeouts[i] = 100 * time.Millisecond // due before the queued ones
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
		if len(s.byCorr) != 0 || len(s.heap) != 0 || s.flive != 0 || len(s.fifo) != 0 {
			t.Fatalf("shard %d holds %d entries, heap %d, queue %d live of %d", i, len(s.byCorr), len(s.heap), s.flive, len(s.fifo))
		}
		s.mu.Unlock()
	}
}
