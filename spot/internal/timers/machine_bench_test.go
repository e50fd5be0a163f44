package timers

import (
	"testing"
	"time"
)

// BenchmarkMachine_Tick: 10,000 repeating timers at 20 Hz spread over
// their period, ticked every 100 µs of schedule time; one op is one
// firing (the schedule's share of a Spot timer firing).
func BenchmarkMachine_Tick(b *testing.B) {
	const n = 10_000
	period := 50 * time.Millisecond
	m := New()
	for i := range n {
		m.Set(Key{Act: uint64(i), Name: "tick"}, t0.Add(time.Duration(i)*period/n), period, nil)
	}
	now := t0
	var out []Firing
	next := 0 // the firing of out that the op takes
	b.ReportAllocs()
	fired := 0
	for b.Loop() {
		for next == len(out) {
			now = now.Add(100 * time.Microsecond)
			out, _ = m.Tick(now, out[:0])
			next = 0
		}
		next++
		fired++
	}
	if fired == 0 {
		b.Fatal("nothing fired")
	}
}
