package liveness

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A healthy peer sends heartbeats at the same interval with jitter below
// half an interval, each delivered after up to one interval of delay (so
// they may arrive reordered), plus other frames at random. Such an exchange
// stays within both thresholds and is never declared lost.
func TestHealthyExchangeNeverLost(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := DefaultConfig()
		iv := cfg.Interval
		beats := rapid.IntRange(1, 80).Draw(t, "beats")
		offset := time.Duration(rapid.Int64Range(0, int64(iv)-1).Draw(t, "offset"))

		type arrival struct {
			at        time.Time
			heartbeat bool
		}
		var arrivals []arrival
		for k := range beats {
			jitter := time.Duration(rapid.Int64Range(-int64(iv)/2+1, int64(iv)/2-1).Draw(t, "jitter"))
			delay := time.Duration(rapid.Int64Range(0, int64(iv)).Draw(t, "delay"))
			sent := t0.Add(offset + time.Duration(k)*iv + jitter)
			arrivals = append(arrivals, arrival{sent.Add(delay), true})
			if rapid.Bool().Draw(t, "frame") {
				arrivals = append(arrivals, arrival{sent.Add(time.Duration(rapid.Int64Range(0, int64(iv)).Draw(t, "frameAt"))), false})
			}
		}
		slices.SortFunc(arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
		// Stop observing before the peer's schedule ends, so its last beats
		// are still on time.
		horizon := t0.Add(time.Duration(beats-1) * iv)

		m := New(cfg, t0)
		next := t0
		i := 0
		for !next.After(horizon) {
			for i < len(arrivals) && !arrivals[i].at.After(next) {
				if a := arrivals[i]; a.heartbeat {
					m.HeartbeatReceived(a.at)
				} else {
					m.FrameReceived(a.at)
				}
				i++
			}
			out := m.Tick(next)
			if out.Lost {
				t.Fatalf("healthy peer lost (%v) at %v with gap %d", out.Reason, next.Sub(t0), m.Gap())
			}
			if out.SendHeartbeat {
				m.HeartbeatSent(next)
			}
			if !out.Next.After(next) {
				t.Fatalf("Next %v does not advance past %v", out.Next.Sub(t0), next.Sub(t0))
			}
			next = out.Next
		}
	})
}

// Against a naive oracle: after any sequence of sends and receives the gap
// equals the floored running count.
func TestGapMatchesOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := New(DefaultConfig(), t0)
		want := 0
		for _, sent := range rapid.SliceOf(rapid.Bool()).Draw(t, "ops") {
			if sent {
				m.HeartbeatSent(t0)
				want++
			} else {
				m.HeartbeatReceived(t0)
				want = max(0, want-1)
			}
			if m.Gap() != want {
				t.Fatalf("gap %d, want %d", m.Gap(), want)
			}
		}
	})
}
