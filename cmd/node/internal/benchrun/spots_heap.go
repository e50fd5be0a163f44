package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/spot"
)

// spotsHeapProfile, when set (spots_test.go's -benchrun.spotsprofile),
// is where spotsHeap writes a heap profile taken with the idle Spots
// active.
var spotsHeapProfile string

// spotsHeapWarm Spots are activated before the heap is read, so pools,
// maps and connections are warm on both sides of the measurement.
const spotsHeapWarm = 256

// spotsHeap measures the live heap per idle Spot and per idle raw
// protoactor-go actor, each as the HeapAlloc difference (after a GC)
// before and after making N of them, divided by N.
func spotsHeap(ctx context.Context, w io.Writer, plan spotsPlan) error {
	n := plan.heapSpots
	proto, err := protoHeapPerActor(n)
	if err != nil {
		return err
	}
	c, err := startSpotsCluster(ctx, 2, spot.Config{}, spotsSteady)
	if err != nil {
		return err
	}
	defer c.stop()
	if _, _, err := spotsActivate(ctx, c.nodes, plan.callers, spotsHeapWarm, "warm"); err != nil {
		return fmt.Errorf("spots: heap warm-up: %w", err)
	}
	was := c.active()
	before := liveHeap()
	el, owners, err := spotsActivate(ctx, c.nodes, plan.callers, n, "idle")
	if err != nil {
		return fmt.Errorf("spots: heap activations: %w", err)
	}
	if got := c.active() - was; got != int64(n) {
		return fmt.Errorf("spots: %d Spots activated, want %d", got, n)
	}
	after := liveHeap()
	if spotsHeapProfile != "" {
		if err := writeHeapProfile(spotsHeapProfile); err != nil {
			return err
		}
	}
	cached := 0
	for _, node := range c.nodes {
		if st, err := spot.StatsOf(node); err == nil {
			cached += st.Cached
		}
	}
	perSpot := float64(int64(after)-int64(before)) / float64(n)
	store, err := storeHeapPerRecord(ctx, n, c.nodes[0].RID())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "heap spots=%d spot        %7.0f B/Spot   (live HeapAlloc after GC, settled, before/after activating them, /N, whole process: Spot actors and mailboxes, "+
		"tree, directories, kind tables, the callers' owner caches (%d entries), the in-memory store's records; owners %s; activated in %v)\n",
		n, perSpot, cached, ownerSpread(owners), el.Round(time.Millisecond))
	fmt.Fprintf(w, "heap spots=%d store part  %7.0f B/Spot   (the in-memory Location Store's ownership record, measured alone on a fresh store; in Redis in production)\n",
		n, store)
	fmt.Fprintf(w, "heap actors=%d protoactor %7.0f B/actor  (baseline: raw protoactor-go, PropsFromProducer children of one parent with a OneForOne supervisor strategy, same measurement)\n",
		n, proto)
	fmt.Fprintf(w, "goal heap per Spot <= %d B: %.0f B: %s\n", goalSpotHeapBytes, perSpot, spotsVerdict(perSpot <= goalSpotHeapBytes))
	r := ratio(perSpot, proto)
	fmt.Fprintf(w, "goal heap per Spot <= %.1fx protoactor (%.0f B): %.2fx: %s\n",
		goalSpotHeapRatio, goalSpotHeapRatio*proto, r, spotsVerdict(proto > 0 && r <= goalSpotHeapRatio))
	return nil
}

// liveHeap is HeapAlloc right after a full collection (twice, so objects
// freed by finalizers and sync.Pool victims are gone too), once it has
// settled: what an earlier part of the bench stopped may still be winding
// down, so it is read until four readings 50 ms apart stay within 64 KiB
// of each other (at most 5 s).
func liveHeap() uint64 {
	read := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	prev, stable := read(), 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && stable < 3; {
		time.Sleep(50 * time.Millisecond)
		cur := read()
		if max(cur, prev)-min(cur, prev) < 64<<10 {
			stable++
		} else {
			stable = 0
		}
		prev = cur
	}
	return prev
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// storeHeapPerRecord is the live heap per Spot record of a fresh in-memory
// Location Store holding n claimed Spots, measured like the Spots.
func storeHeapPerRecord(ctx context.Context, n int, owner string) (float64, error) {
	m := location.NewMemory()
	defer func() { _ = m.Close() }()
	before := liveHeap()
	for i := range n {
		// The ID is made here: the store keeps it, as it keeps the
		// runtime's.
		expect := location.Ownership{Mesh: spotsMesh, Kind: spotsKind, ID: spotID("idle", i)}
		next := expect
		next.OwnerRID, next.OwnerGeneration, next.Epoch = owner, 1, 1
		if _, err := m.ClaimSpot(ctx, expect, next); err != nil {
			return 0, fmt.Errorf("spots: store claim: %w", err)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(m)
	return float64(int64(after)-int64(before)) / float64(n), nil
}

// protoIdle is the raw baseline's trivial actor.
type protoIdle struct{ started *atomic.Int64 }

func (a *protoIdle) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Started); ok {
		a.started.Add(1)
	}
}

// protoSpawner spawns n children when asked.
type protoSpawner struct {
	n     int
	props *actor.Props
	done  chan struct{}
}

type spawnAll struct{}

func (p *protoSpawner) Receive(c actor.Context) {
	if _, ok := c.Message().(*spawnAll); ok {
		for range p.n {
			c.Spawn(p.props)
		}
		close(p.done)
	}
}

var errProtoSpawn = errors.New("spots: the protoactor parent did not spawn its children")

// protoHeapPerActor is the live heap per idle raw protoactor-go actor:
// n children of one parent with a OneForOne strategy, each started.
func protoHeapPerActor(n int) (float64, error) {
	as := protoSystem()
	defer as.Shutdown()
	started := &atomic.Int64{}
	sp := &protoSpawner{n: n, done: make(chan struct{}),
		props: actor.PropsFromProducer(func() actor.Actor { return &protoIdle{started: started} })}
	parent := actor.PropsFromProducer(func() actor.Actor { return sp },
		actor.WithSupervisor(actor.NewOneForOneStrategy(3, 10*time.Second, actor.DefaultDecider)))
	pid, err := as.Root.SpawnNamed(parent, "bench-parent")
	if err != nil {
		return 0, err
	}
	before := liveHeap()
	as.Root.Send(pid, &spawnAll{})
	select {
	case <-sp.done:
	case <-time.After(2 * time.Minute):
		return 0, errProtoSpawn
	}
	if err := waitCount(started, int64(n)); err != nil {
		return 0, err
	}
	after := liveHeap()
	runtime.KeepAlive(as)
	return float64(int64(after)-int64(before)) / float64(n), nil
}
