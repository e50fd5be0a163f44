package benchrun

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// moveSample is one caller call: when it started and ended (since the
// callers started), who answered, whether it failed.
type moveSample struct {
	start, end time.Duration
	owner      int8 // 0 the first server, 1 the second, -1 another or none
	failed     bool
}

// moveWindow is a span of the callers' run; a steady window takes the
// calls that started and ended in it, a move window every call that
// overlaps it.
type moveWindow struct {
	name     string
	from, to time.Duration
	overlap  bool
	about    string
}

func (mw moveWindow) has(s moveSample) bool {
	if mw.overlap {
		return s.start < mw.to && s.end > mw.from
	}
	return s.start >= mw.from && s.end <= mw.to
}

// spotsMoveCallers: callers on an Object Client call a set of Spots of the
// persistent kind continuously (bounded concurrency, one call at a time
// each). Their latency is measured in a steady window, during
// spot.Relocate of the host to a new server, in a steady window after it,
// during Node.Drain of the new server (which hands the Spots back), and in
// a steady window after that — one run, the steady windows being the
// baseline.
func spotsMoveCallers(ctx context.Context, w io.Writer, plan spotsMovePlan) error {
	logs := newMoveLogs()
	c := newMoveCluster()
	defer c.stop()
	a, err := c.startMoveNode(ctx, "reloc0", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	cl, err := c.startMoveNode(ctx, "caller", routemesh.ObjectClient, logs)
	if err != nil {
		return err
	}
	spots := plan.callSpots
	actEl, err := spotsParallel(ctx, []*routemesh.Node{cl}, plan.actCallers, spots, func(ctx context.Context, nd *routemesh.Node, i int) error {
		v, res, err := moveCall(ctx, nd, spotID("call", i))
		if err == nil && (v != 1 || res.Owner != a.RID()) {
			err = fmt.Errorf("spots-move: %s answered %d from %s, want 1 from %s", spotID("call", i), v, res.Owner, a.RID())
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("spots-move: caller activations: %w", err)
	}
	b, err := c.startMoveNode(ctx, "reloc1", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	logs.reset() // from here on: warnings during the measured run

	// The callers.
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		errs    moveErrs
		samples = make([][]moveSample, plan.callers)
		okCalls = make([]atomic.Int64, spots)
	)
	t0 := time.Now()
	for g := range plan.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 0x5eed))
			out := make([]moveSample, 0, 1<<14)
			for !stop.Load() {
				i := rnd.IntN(spots)
				id := spotID("call", i)
				s := moveSample{start: time.Since(t0), owner: -1}
				cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
				_, res, err := moveCall(cctx, cl, id)
				cancel()
				s.end = time.Since(t0)
				switch {
				case err != nil:
					s.failed = true
					errs.add(s.start, id, err)
				default:
					okCalls[i].Add(1)
				}
				switch res.Owner {
				case a.RID():
					s.owner = 0
				case b.RID():
					s.owner = 1
				}
				out = append(out, s)
			}
			samples[g] = out
		}()
	}

	// The run: steady, relocate, steady, drain, steady.
	sleepCtx := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	sleepCtx(plan.steady / 4) // warm-up: every caller running
	var wins []moveWindow
	steady := func(name, about string) {
		from := time.Since(t0)
		sleepCtx(plan.steady)
		wins = append(wins, moveWindow{name: name, from: from, to: time.Since(t0), about: about})
	}
	steady("steady", fmt.Sprintf("calls started and ended in a %v window before any move; the baseline", plan.steady))

	r0 := time.Since(t0)
	rel, relErr := spot.Relocate(ctx, a, b.RID())
	r1 := time.Since(t0)
	relEl := r1 - r0
	wins = append(wins, moveWindow{name: "relocate", from: r0, to: r1, overlap: true,
		about: fmt.Sprintf("calls overlapping spot.Relocate(%s → %s), %v: moved %d, failed %d, other kinds %d = %.0f moves/s under the callers' load (error: %v)",
			a.RID(), b.RID(), relEl.Round(time.Millisecond), rel.Moved, rel.Failed, rel.Other, float64(rel.Moved)/relEl.Seconds(), relErr)})
	activeB := moveActive(b)
	steady("after-relocate", fmt.Sprintf("calls started and ended in the %v after the relocation", plan.steady))
	if plan.late > 0 {
		sleepCtx(r1 + plan.late - time.Since(t0))
		steady("after-relocate-late", fmt.Sprintf("calls started and ended in a %v window from %v after the relocation, "+
			"once the old owner has stopped forwarding (it forwards for %v after a move)", plan.steady, plan.late, moveForwardWait))
	}

	before, _ := spot.StatsOf(b)
	d0 := time.Since(t0)
	drainErr := b.Drain(ctx)
	d1 := time.Since(t0)
	after, _ := spot.StatsOf(b)
	drainEl := d1 - d0
	drained := int(after.Moves - before.Moves)
	wins = append(wins, moveWindow{name: "drain", from: d0, to: d1, overlap: true,
		about: fmt.Sprintf("calls overlapping Node.Drain(%s), %v: it hands the Spots back to %s: moved %d = %.0f moves/s under the callers' load (error: %v)",
			b.RID(), drainEl.Round(time.Millisecond), a.RID(), drained, float64(drained)/drainEl.Seconds(), drainErr)})
	steady("after-drain", fmt.Sprintf("calls started and ended in the %v after the drain", plan.steady))
	stop.Store(true)
	wg.Wait()
	end := time.Since(t0)

	var all []moveSample
	for _, s := range samples {
		all = append(all, s...)
	}
	fmt.Fprintf(w, "callers: %d goroutines on Object Client %s, one call at a time each (%v bound per call), each to a random one of %d Spots of kind %q "+
		"activated on %s (in %v); %s joined as a new server; %d calls in %v\n",
		plan.callers, cl.RID(), moveCallTimeout, spots, moveKind, a.RID(), actEl.Round(time.Millisecond), b.RID(), len(all), end.Round(time.Millisecond))
	stats := map[string]lockstepResult{}
	for _, mw := range wins {
		var lat []time.Duration
		var failed, byA, byB int
		var worst time.Duration
		for _, s := range all {
			if !mw.has(s) {
				continue
			}
			if s.failed {
				failed++
				continue
			}
			d := s.end - s.start
			lat = append(lat, d)
			worst = max(worst, d)
			switch s.owner {
			case 0:
				byA++
			case 1:
				byB++
			}
		}
		r := summarize(lat, mw.to-mw.from)
		stats[mw.name] = r
		fmt.Fprintf(w, "latency %-19s n=%-7d %8.0f calls/s  p50 %8v  p99 %8v  max %8v  errors %d  answered by %s/%s %d/%d  (%s)\n",
			mw.name, r.n, r.rate, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), worst.Round(time.Microsecond), failed,
			a.RID(), b.RID(), byA, byB, mw.about)
	}
	st := stats["steady"]
	fmt.Fprintf(w, "ratio latency vs steady: relocate p50 %.2fx p99 %.2fx; drain p50 %.2fx p99 %.2fx; after-drain p99 %.2fx (no goal; same run, same callers)\n",
		ratio(float64(stats["relocate"].p50), float64(st.p50)), ratio(float64(stats["relocate"].p99), float64(st.p99)),
		ratio(float64(stats["drain"].p50), float64(st.p50)), ratio(float64(stats["drain"].p99), float64(st.p99)),
		ratio(float64(stats["after-drain"].p99), float64(st.p99)))
	if plan.late > 0 {
		fmt.Fprintf(w, "ratio after-relocate vs steady: p50 %.2fx calls/s %.2fx; after-relocate-late p50 %.2fx calls/s %.2fx (no goal)\n",
			ratio(float64(stats["after-relocate"].p50), float64(st.p50)), ratio(stats["after-relocate"].rate, st.rate),
			ratio(float64(stats["after-relocate-late"].p50), float64(st.p50)), ratio(stats["after-relocate-late"].rate, st.rate))
	}

	// Every Spot's count is 1 (its activation) + the calls answered + this
	// call: no call was lost or run twice across the moves.
	var match, mismatch, checkErr atomic.Int64
	_, _ = spotsParallel(ctx, []*routemesh.Node{cl}, plan.actCallers, spots, func(ctx context.Context, nd *routemesh.Node, i int) error {
		cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
		v, _, err := moveCall(cctx, nd, spotID("call", i))
		cancel()
		switch {
		case err != nil:
			checkErr.Add(1)
		case v == okCalls[i].Load()+2:
			match.Add(1)
		default:
			mismatch.Add(1)
		}
		return nil
	})
	fmt.Fprintf(w, "callers state check: %d of %d Spots counted exactly the calls answered (%d differ, %d check calls failed); %d active on %s when Relocate returned, %d back on %s after the drain\n",
		match.Load(), spots, mismatch.Load(), checkErr.Load(), activeB, b.RID(), moveActive(a), a.RID())
	fmt.Fprintf(w, "callers errors: %s\n", errs.summary())
	fmt.Fprintf(w, "callers runtime warnings and errors logged: %s\n", logs.line())
	fmt.Fprintf(w, "goal zero caller errors while Spots move (relocate and drain, whole run): %d: %s\n", errs.count, spotsVerdict(errs.count == 0))
	complete := relErr == nil && rel.Moved == spots && rel.Failed == 0 && drainErr == nil && drained == spots
	fmt.Fprintf(w, "goal every Spot moved (relocate %d of %d, drain %d of %d): %s\n", rel.Moved, spots, drained, spots, spotsVerdict(complete))
	return nil
}
