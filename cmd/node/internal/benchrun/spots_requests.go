package benchrun

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// spotsThroughput measures activations per second and requests per second
// to an active Spot on two Object Servers, each beside the channel request
// between the same nodes with the same payload and concurrency.
func spotsThroughput(ctx context.Context, w io.Writer, plan spotsPlan) error {
	c, err := startSpotsCluster(ctx, 2, spot.Config{}, spotsSteady)
	if err != nil {
		return err
	}
	defer c.stop()
	a, b := c.nodes[0], c.nodes[1]
	fmt.Fprintf(w, "cluster: Object Servers %s and %s; %s serves channel %s, %s serves %s (each the other's Client)\n",
		a.RID(), b.RID(), a.RID(), spotsChannel(0), b.RID(), spotsChannel(1))
	payload := make([]byte, spotsPayloadSize)
	_, _ = rand.Read(payload)

	// 1. Activations: first calls to N new IDs from both nodes, beside
	// repeat calls to the same IDs and channel calls, in rounds.
	callers := plan.callers * len(c.nodes)
	var first, repeat, channel []float64
	var owners []string
	for r := range plan.rounds {
		prefix := fmt.Sprintf("act%d", r)
		was := c.active()
		el, own, err := spotsActivate(ctx, c.nodes, plan.callers, plan.activations, prefix)
		if err != nil {
			return fmt.Errorf("spots: activations: %w", err)
		}
		if got := c.active() - was; got != int64(plan.activations) {
			return fmt.Errorf("spots: %d Spots activated by %d first calls", got, plan.activations)
		}
		first, owners = append(first, float64(plan.activations)/el.Seconds()), own
		el, err = spotsParallel(ctx, c.nodes, plan.callers, plan.activations, func(ctx context.Context, n *routemesh.Node, i int) error {
			_, err := spotCall(ctx, n, spotID(prefix, i), payload)
			return err
		})
		if err != nil {
			return fmt.Errorf("spots: repeat calls: %w", err)
		}
		repeat = append(repeat, float64(plan.activations)/el.Seconds())
		el, err = spotsParallel(ctx, c.nodes, plan.callers, plan.activations, func(ctx context.Context, n *routemesh.Node, i int) error {
			ch := spotsChannel(1)
			if n == b {
				ch = spotsChannel(0)
			}
			return chanCall(ctx, n, ch, payload)
		})
		if err != nil {
			return fmt.Errorf("spots: channel calls: %w", err)
		}
		channel = append(channel, float64(plan.activations)/el.Seconds())
	}
	fmt.Fprintf(w, "activations spot first-call  n=%d callers=%d %9.0f activations/s  (median of rounds=%d; a first call to a new ID: placement, claim in the store, spawn, first turn; last round's owners %s)\n",
		plan.activations, callers, median(first), plan.rounds, ownerSpread(owners))
	fmt.Fprintf(w, "activations spot repeat-call n=%d callers=%d %9.0f calls/s        (median of rounds=%d; the same IDs again, already active, owner cached)\n",
		plan.activations, callers, median(repeat), plan.rounds)
	fmt.Fprintf(w, "activations channel          n=%d callers=%d %9.0f calls/s        (median of rounds=%d; baseline: each node calls the other's Server channel)\n",
		plan.activations, callers, median(channel), plan.rounds)

	// 2. Requests to one active Spot, owner local and remote, from node a.
	for _, side := range []struct {
		owner   string
		node    *routemesh.Node
		channel string
	}{{"local", a, spotsChannel(0)}, {"remote", b, spotsChannel(1)}} {
		id, err := spotOwnedBy(ctx, a, side.node.RID(), "req-"+side.owner)
		if err != nil {
			return err
		}
		spotF := func(ctx context.Context) error {
			res, err := spotCall(ctx, a, id, payload)
			if err == nil && res.Owner != side.node.RID() {
				return fmt.Errorf("spots: %s answered by %s, want %s", id, res.Owner, side.node.RID())
			}
			return err
		}
		chanF := func(ctx context.Context) error { return chanCall(ctx, a, side.channel, payload) }
		if err := spotsRequests(ctx, w, plan, side.owner, id, spotF, chanF); err != nil {
			return fmt.Errorf("spots: requests, owner %s: %w", side.owner, err)
		}
	}
	return nil
}

// ownerSpread says how many Spots each node owns.
func ownerSpread(owners []string) string {
	per := map[string]int{}
	for _, o := range owners {
		per[o]++
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, per[k]))
	}
	return strings.Join(parts, " ")
}

// spotsRequests times spot and channel calls side by side: one at a time
// (latencies), then plan.inflight at a time (rate and allocations), in
// rounds that alternate which side goes first; each line is the round with
// the median rate.
func spotsRequests(ctx context.Context, w io.Writer, plan spotsPlan, owner, id string, spotF, chanF func(context.Context) error) error {
	for _, f := range []func(context.Context) error{chanF, spotF} {
		if _, err := spotsLockstep(ctx, f, countGate(plan.warmup)); err != nil {
			return err
		}
	}
	lock := func(f func(context.Context) error) (lockstepResult, error) {
		g := newGate(plan.requests, 1<<24)
		defer g.close()
		t0 := time.Now()
		lat, err := spotsLockstep(ctx, f, g.next)
		return summarize(lat, time.Since(t0)), err
	}
	pipe := func(f func(context.Context) error) (pipelinedResult, error) {
		// The gate starts inside the run: measurePipelined collects first,
		// which takes a while with tens of thousands of Spots live.
		return measurePipelined(func() (int, error) {
			g := newGate(plan.requests, 1<<24)
			defer g.close()
			return spotsPipelined(ctx, f, plan.inflight, g.next)
		})
	}
	var spotLocks, chanLocks []lockstepResult
	var spotPipes, chanPipes []pipelinedResult
	for r := range plan.rounds {
		sides := []struct {
			f     func(context.Context) error
			locks *[]lockstepResult
			pipes *[]pipelinedResult
		}{{chanF, &chanLocks, &chanPipes}, {spotF, &spotLocks, &spotPipes}}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, s := range sides {
			x, err := lock(s.f)
			if err != nil {
				return err
			}
			*s.locks = append(*s.locks, x)
		}
		for _, s := range sides {
			x, err := pipe(s.f)
			if err != nil {
				return err
			}
			*s.pipes = append(*s.pipes, x)
		}
	}
	spotLock, chanLock := medianBy(spotLocks, func(x lockstepResult) float64 { return x.rate }),
		medianBy(chanLocks, func(x lockstepResult) float64 { return x.rate })
	spotPipe, chanPipe := medianBy(spotPipes, func(x pipelinedResult) float64 { return x.rate }),
		medianBy(chanPipes, func(x pipelinedResult) float64 { return x.rate })
	lline := func(side string, x lockstepResult) {
		fmt.Fprintf(w, "requests owner=%-6s inflight=1  %-7s %9.0f req/s   p50 %8v  p99 %8v  (n=%d)\n",
			owner, side, x.rate, x.p50.Round(time.Microsecond), x.p99.Round(time.Microsecond), x.n)
	}
	lline("spot", spotLock)
	lline("channel", chanLock)
	pline := func(side string, x pipelinedResult) {
		fmt.Fprintf(w, "requests owner=%-6s inflight=%-2d %-7s %9.0f req/s  %6.1f allocs/req  %7.0f B/req  (n=%d)\n",
			owner, plan.inflight, side, x.rate, x.allocsPer, x.bytesPer, x.n)
	}
	pline("spot", spotPipe)
	pline("channel", chanPipe)
	fmt.Fprintf(w, "ratio requests owner=%s spot/channel: inflight=1 rate %.2fx p99 %.2fx; inflight=%d rate %.2fx (no goal; median of rounds=%d; Spot %s, one activation serves all)\n",
		owner, ratio(spotLock.rate, chanLock.rate), ratio(float64(spotLock.p99), float64(chanLock.p99)),
		plan.inflight, ratio(spotPipe.rate, chanPipe.rate), plan.rounds, id)
	return nil
}

// median is the middle value (the upper one of an even count).
func median(xs []float64) float64 {
	return medianBy(xs, func(x float64) float64 { return x })
}

// medianBy returns the element whose key is the median.
func medianBy[T any](xs []T, key func(T) float64) T {
	s := slices.Clone(xs)
	slices.SortFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[len(s)/2]
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// spotsRunLimit bounds one timed run. The calls share its deadline (one
// context for the run, as the mesh bench does), so neither side pays for a
// context per call.
const spotsRunLimit = 2 * time.Minute

// spotsLockstep makes one call at a time while next allows.
func spotsLockstep(ctx context.Context, f func(context.Context) error, next func() bool) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, spotsRunLimit)
	defer cancel()
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		if err := f(ctx); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// spotsPipelined runs inflight goroutines calling f while next allows and
// returns the number of completed calls.
func spotsPipelined(ctx context.Context, f func(context.Context) error, inflight int, next func() bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, spotsRunLimit)
	defer cancel()
	var (
		wg    sync.WaitGroup
		done  atomic.Int64
		first atomic.Pointer[error]
	)
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next() {
				if err := f(ctx); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return int(done.Load()), *e
	}
	return int(done.Load()), nil
}
