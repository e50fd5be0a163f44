package routemesh

import (
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds of the call latency histogram.
var latencyBuckets = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 5 * time.Second,
}

// histogram is a fixed-bucket latency histogram of atomics (a leaf).
type histogram struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64 // the last is +Inf
	sumNs  atomic.Uint64
}

func (h *histogram) observe(d time.Duration) {
	h.counts[bucketOf(d)].Add(1)
	h.sumNs.Add(uint64(d))
}

// bucketOf is the index of the first bucket whose bound d does not
// exceed (len(latencyBuckets) for +Inf). A scan from the smallest bound:
// most durations a node observes fall in the first buckets, where it ends
// after a compare or two (a binary search always takes four).
func bucketOf(d time.Duration) int {
	i := 0
	for i < len(latencyBuckets) && d > latencyBuckets[i] {
		i++
	}
	return i
}

// LatencyBucket is one histogram bucket: calls that took at most LE.
type LatencyBucket struct {
	LE    string `json:"le"`
	Count uint64 `json:"count"`
}

// addTo adds h's counts and sum to counts and sum (a sum of shards).
func (h *histogram) addTo(counts *[len(latencyBuckets) + 1]uint64, sum *uint64) {
	for i := range h.counts {
		counts[i] += h.counts[i].Load()
	}
	*sum += h.sumNs.Load()
}

// bucketsOf is counts as buckets with their bounds.
func bucketsOf(counts *[len(latencyBuckets) + 1]uint64) []LatencyBucket {
	out := make([]LatencyBucket, 0, len(counts))
	for i, b := range latencyBuckets {
		out = append(out, LatencyBucket{LE: b.String(), Count: counts[i]})
	}
	return append(out, LatencyBucket{LE: "+Inf", Count: counts[len(latencyBuckets)]})
}

func (h *histogram) snapshot() []LatencyBucket {
	var counts [len(latencyBuckets) + 1]uint64
	var sum uint64
	h.addTo(&counts, &sum)
	return bucketsOf(&counts)
}
