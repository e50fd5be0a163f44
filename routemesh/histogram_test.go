package routemesh

import (
	"sort"
	"testing"
	"time"
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
