package routemesh

import (
	"sort"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
)

// bucketOf puts every duration where a binary search over the bounds
// does: at each bound, just past it, and far beyond the last.
func TestBucketOf_MatchesTheBounds(t *testing.T) {
	want := func(d time.Duration) int {
		return sort.Search(len(latencyBuckets), func(i int) bool { return d <= latencyBuckets[i] })
	}
	ds := []time.Duration{-1, 0, 1, 10 * time.Hour}
	for _, b := range latencyBuckets {
		ds = append(ds, b-1, b, b+1)
	}
	for _, d := range ds {
		if got, w := bucketOf(d), want(d); got != w {
			t.Errorf("bucketOf(%v) = %d, want %d", d, got, w)
		}
	}
	var h histogram
	h.observe(latencyBuckets[0])
	h.observe(latencyBuckets[0] + 1)
	h.observe(time.Hour)
	if h.counts[0].Load() != 1 || h.counts[1].Load() != 1 || h.counts[len(latencyBuckets)].Load() != 1 {
		t.Fatalf("counts after three observations: %v %v %v", h.counts[0].Load(), h.counts[1].Load(), h.counts[len(latencyBuckets)].Load())
	}
}

// A packet's counters are summed over its shards: what each worker's
// shard counted shows once in the snapshot.
func TestPacketStats_SnapshotSumsTheShards(t *testing.T) {
	var p packetStats
	arrived := time.Now().Add(-time.Millisecond)
	for sh := range statShards {
		q := p.began(sh, arrived)
		p.ended(sh, arrived, q, false, nil)
	}
	p.sent(1)
	p.result(0, zerr.ErrBusy)
	sp := p.snapshot("x")
	if sp.Requests["ok"] != statShards || sp.Total() != statShards+1 || sp.Sends != 1 {
		t.Fatalf("requests %v, sends %d; want %d ok, one refused, one send", sp.Requests, sp.Sends, statShards)
	}
	var lat, queued uint64
	for i := range sp.Latency {
		lat += sp.Latency[i].Count
		queued += sp.Queued[i].Count
	}
	if lat != statShards || queued != statShards || sp.QueuedSum < statShards*time.Millisecond {
		t.Fatalf("latency %d, queued %d (sum %v); want %d each, queued ≥ 1 ms each", lat, queued, sp.QueuedSum, statShards)
	}
}
