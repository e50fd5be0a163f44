package benchrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// goalTimerLatenessP99 is the Spot timers' goal: lateness p99 at 20 Hz on
// every Spot of the bench.
const goalTimerLatenessP99 = 5 * time.Millisecond

// timerBench is one Spot of the timer bench: its timer started at start.
type timerBench struct {
	start  time.Time
	period time.Duration
}

var (
	tbArmP  = wire.NewPacket[int64, struct{}]("arm") // period in ms
	tbTickP = wire.NewPacket[struct{}, struct{}]("tick")
)

// timerSamples collects the lateness of each firing (preallocated: the
// handlers only add an index).
type timerSamples struct {
	v []time.Duration
	n atomic.Int64
}

func (s *timerSamples) add(d time.Duration) {
	if i := s.n.Add(1) - 1; int(i) < len(s.v) {
		s.v[i] = d
	}
}

// spotsTimers starts plan.timerSpots Spots on one Object Server, each with
// a repeating timer at 20 Hz, and measures for plan.timerWindow the CPU
// per firing and each firing's lateness after its due time on the
// timer's grid (fixed rate: the due times are start + k·period).
func spotsTimers(ctx context.Context, w io.Writer, plan spotsPlan) error {
	const period = 50 * time.Millisecond
	samples := &timerSamples{v: make([]time.Duration, plan.timerSpots*int(plan.timerWindow/period+2)*2)}
	var counting atomic.Bool
	k := spot.NewKind("ticker", func(string) *timerBench { return &timerBench{} })
	spot.On(k, tbArmP, func(c *spot.Context, s *timerBench, ms int64) (struct{}, error) {
		s.start, s.period = time.Now(), time.Duration(ms)*time.Millisecond
		return struct{}{}, spot.StartTimerOf(c, "tick", s.period, s.period, tbTickP, struct{}{})
	})
	spot.OnSend(k, tbTickP, func(_ *spot.Context, s *timerBench, _ struct{}) {
		if counting.Load() {
			samples.add(time.Since(s.start) % s.period) // after the last due time on the grid
		}
	})
	k.SetTimersKeepActive()
	store := location.NewMemory()
	defer store.Close()
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(spotsMesh).SetRoutingIDPrefix("timers").SetObjectRole(routemesh.ObjectServer)
	spot.Enable(b, k)
	h, err := zlink.Start(ctx, o)
	if err != nil {
		return fmt.Errorf("timers: start: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = h.Stop(sctx)
		cancel()
	}()
	n := h.Mesh(spotsMesh)
	if err := spot.WaitReady(ctx, n); err != nil {
		return err
	}
	// Arm every Spot, spreading their grids over one period.
	for i := range plan.timerSpots {
		if _, err := spot.Call(ctx, n, "ticker", fmt.Sprintf("t-%06d", i), tbArmP, int64(period/time.Millisecond)); err != nil {
			return fmt.Errorf("timers: arm %d: %w", i, err)
		}
	}
	settle := time.NewTimer(2 * period)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-settle.C:
	}
	st0, _ := spot.StatsOf(n)
	cpu0 := cmpProcessCPU()
	counting.Store(true)
	stopProfile := timersProfile()
	window := time.NewTimer(plan.timerWindow)
	select {
	case <-ctx.Done():
		stopProfile()
		return ctx.Err()
	case <-window.C:
	}
	stopProfile()
	counting.Store(false)
	cpu := cmpProcessCPU() - cpu0
	st1, _ := spot.StatsOf(n)
	got := min(int(samples.n.Load()), len(samples.v))
	lat := slices.Clone(samples.v[:got])
	slices.Sort(lat)
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(int(p*float64(len(lat))), len(lat)-1)]
	}
	fired := st1.TimerTurns - st0.TimerTurns
	want := float64(plan.timerSpots) * plan.timerWindow.Seconds() / period.Seconds()
	perFiring := time.Duration(0)
	if fired > 0 {
		perFiring = cpu / time.Duration(fired)
	}
	fmt.Fprintf(w, "timers spots=%d period=%v window=%v  firings %d (%.0f%% of due)  merged %d  cpu/firing %.1fµs  lateness p50 %v p99 %v\n",
		plan.timerSpots, period, plan.timerWindow, fired, 100*float64(fired)/max(want, 1), st1.TimersMerged-st0.TimersMerged,
		float64(perFiring.Nanoseconds())/1e3, q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond))
	fmt.Fprintf(w, "goal timers lateness p99 <= %v at %d Spots × 20 Hz: %v, %s\n", goalTimerLatenessP99, plan.timerSpots,
		q(0.99).Round(10*time.Microsecond), spotsVerdict(len(lat) > 0 && q(0.99) <= goalTimerLatenessP99))
	return nil
}
