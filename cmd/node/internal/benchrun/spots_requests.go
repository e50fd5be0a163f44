package benchrun

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
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

	// 1. Activations: first calls to N new IDs from both nodes.
	callers := plan.callers * len(c.nodes)
	was := c.active()
	el, owners, err := spotsActivate(ctx, c.nodes, plan.callers, plan.activations, "act")
	if err != nil {
		return fmt.Errorf("spots: activations: %w", err)
	}
	if got := c.active() - was; got != int64(plan.activations) {
		return fmt.Errorf("spots: %d Spots activated by %d first calls", got, plan.activations)
	}
	fmt.Fprintf(w, "activations spot first-call  n=%d callers=%d %9.0f activations/s  (first call to a new ID: placement, claim in the store, spawn, first turn; owners %s)\n",
		plan.activations, callers, float64(plan.activations)/el.Seconds(), ownerSpread(owners))
	el, err = spotsParallel(ctx, c.nodes, plan.callers, plan.activations, func(ctx context.Context, n *routemesh.Node, i int) error {
		_, err := spotCall(ctx, n, spotID("act", i), payload)
		return err
	})
	if err != nil {
		return fmt.Errorf("spots: repeat calls: %w", err)
	}
	fmt.Fprintf(w, "activations spot repeat-call n=%d callers=%d %9.0f calls/s        (the same IDs again, already active, owner cached)\n",
		plan.activations, callers, float64(plan.activations)/el.Seconds())
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
	fmt.Fprintf(w, "activations channel          n=%d callers=%d %9.0f calls/s        (baseline: each node calls the other's Server channel)\n",
		plan.activations, callers, float64(plan.activations)/el.Seconds())

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
// (latencies), then plan.inflight at a time (rate and allocations).
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
	chanLock, err := lock(chanF)
	if err != nil {
		return err
	}
	spotLock, err := lock(spotF)
	if err != nil {
		return err
	}
	pipe := func(f func(context.Context) error) (pipelinedResult, error) {
		g := newGate(plan.requests, 1<<24)
		defer g.close()
		return measurePipelined(func() (int, error) { return spotsPipelined(ctx, f, plan.inflight, g.next) })
	}
	chanPipe, err := pipe(chanF)
	if err != nil {
		return err
	}
	spotPipe, err := pipe(spotF)
	if err != nil {
		return err
	}
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
	fmt.Fprintf(w, "ratio requests owner=%s spot/channel: inflight=1 rate %.2fx p99 %.2fx; inflight=%d rate %.2fx (no goal; Spot %s, one activation serves all)\n",
		owner, ratio(spotLock.rate, chanLock.rate), ratio(float64(spotLock.p99), float64(chanLock.p99)),
		plan.inflight, ratio(spotPipe.rate, chanPipe.rate), id)
	return nil
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
