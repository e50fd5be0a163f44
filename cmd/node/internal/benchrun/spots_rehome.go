package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/supervisor"
)

// spotsRehomeConfig is the short ownership lease of the re-home part.
var spotsRehomeConfig = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}

// spotsMeshRestarts is the host's restart intensity for a mesh actor
// (supervisor.DefaultConfig: 3 within 10 s); the next failure gives up and
// the node goes Failed.
const spotsMeshRestarts = 3

var errNotFailed = errors.New("spots: the crashed node did not go Failed")

// spotsRehome spreads K Spots over three Object Servers, crashes one (its
// mesh actor fails past the restart intensity: the node goes Failed, its
// Spot actors and its lease renewals stop, nothing is released) and times
// until every one of its Spots answers from another server.
func spotsRehome(ctx context.Context, w io.Writer, plan spotsPlan) error {
	cfg := spotsRehomeConfig
	c, err := startSpotsCluster(ctx, 3, cfg, spotsFast)
	if err != nil {
		return err
	}
	defer c.stop()
	_, owners, err := spotsActivate(ctx, c.nodes, 4, plan.rehomeSpots, "rehome")
	if err != nil {
		return fmt.Errorf("spots: re-home activations: %w", err)
	}
	vi := len(c.nodes) - 1
	victim, vh := c.nodes[vi], c.hosts[vi]
	survivors := c.nodes[:vi]
	var ids []string
	for i, o := range owners {
		if o == victim.RID() {
			ids = append(ids, spotID("rehome", i))
		}
	}
	if len(ids) == 0 {
		return fmt.Errorf("spots: no Spot placed on %s (owners %s)", victim.RID(), ownerSpread(owners))
	}

	// The first failures are restarts (each rebuilds the node; its Spot
	// records and lease stay); the Spots are then called again, so they
	// are active on the victim when it crashes.
	path := meshbridge.MeshActorPath(victim)
	for i := range spotsMeshRestarts {
		if err := spotsRestart(ctx, vh, path, fmt.Sprintf("bench restart %d", i)); err != nil {
			return err
		}
	}
	if err := c.waitReady(ctx, c.nodes); err != nil {
		return err
	}
	payload := make([]byte, spotsPayloadSize)
	kept := ids[:0]
	for i, id := range ids {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := spotCall(cctx, survivors[i%len(survivors)], id, payload)
		cancel()
		if err != nil {
			return fmt.Errorf("spots: %s before the crash: %w", id, err)
		}
		if res.Owner == victim.RID() {
			kept = append(kept, id)
		}
	}
	ids = kept
	if len(ids) == 0 {
		return fmt.Errorf("spots: none of the Spots of %s answered from it after its restarts", victim.RID())
	}
	st, err := spot.StatsOf(victim)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rehome servers=%d spots=%d on the crashed node %s: %d (active there: %d); lease_ttl=%v renew_every=%v margin=%v\n",
		len(c.nodes), plan.rehomeSpots, victim.RID(), len(ids), st.Kinds[0].Active, cfg.LeaseTTL, cfg.RenewEvery, cfg.Margin)

	// The crash, then every Spot polled from a survivor until another
	// server answers.
	var fromVictim, lastVictim atomic.Int64 // answers from the crashed node after the crash, and when the last came
	took := make([]time.Duration, len(ids))
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	t0, err := spotsCrash(ctx, vh, path)
	if err != nil {
		return err
	}
	failed := make(chan error, 1)
	var failedAfter time.Duration
	go func() {
		var err error
		failedAfter, err = spotsWaitFailed(ctx, victim, t0)
		failed <- err
	}()
	for i, id := range ids {
		caller := survivors[i%len(survivors)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cctx, ccancel := context.WithTimeout(pctx, 250*time.Millisecond)
				res, err := spotCall(cctx, caller, id, payload)
				ccancel()
				switch {
				case err == nil && res.Owner != victim.RID():
					took[i] = time.Since(t0)
					return
				case err == nil:
					fromVictim.Add(1)
					for at := int64(time.Since(t0)); ; {
						cur := lastVictim.Load()
						if at <= cur || lastVictim.CompareAndSwap(cur, at) {
							break
						}
					}
				case pctx.Err() != nil:
					err = fmt.Errorf("spots: %s not re-homed after %v: %w", id, time.Since(t0).Round(time.Millisecond), err)
					first.CompareAndSwap(nil, &err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if err := <-failed; err != nil {
		return err
	}
	if e := first.Load(); e != nil {
		return *e
	}
	slices.Sort(took)
	worst := took[len(took)-1]
	bound := cfg.LeaseTTL + cfg.Margin
	fmt.Fprintf(w, "rehome crash: %d failures of the mesh actor, the last past its restart intensity (node Failed after %v; its Spot lease is not renewed, no record released)\n",
		spotsMeshRestarts+1, failedAfter.Round(10*time.Microsecond))
	fmt.Fprintf(w, "rehome %d Spots answered from another server: first %v  p50 %v  all %v after the crash (answers still from the crashed node: %d, the last %v after the crash)\n",
		len(took), took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond), worst.Round(time.Millisecond),
		fromVictim.Load(), time.Duration(lastVictim.Load()).Round(10*time.Microsecond))
	fmt.Fprintf(w, "goal re-home <= lease TTL + margin (%v): %v: %s\n", bound, worst.Round(time.Millisecond), spotsVerdict(worst <= bound))
	return nil
}

// spotsRestart makes the actor at path panic once it is running and waits
// until it has been restarted.
func spotsRestart(ctx context.Context, h *zlink.Host, path, reason string) error {
	if err := spotsWaitTree(ctx, h, path, "running", func(n supervisor.Node) bool { return n.State == supervisor.Running }); err != nil {
		return err
	}
	if err := faults.InjectPanic(h, path, reason); err != nil {
		return fmt.Errorf("spots: inject panic: %w", err)
	}
	return spotsWaitTree(ctx, h, path, "restarted", func(n supervisor.Node) bool {
		return n.State == supervisor.Running && n.LastFailure != nil && n.LastFailure.Reason == reason
	})
}

// spotsCrash injects the failure past the restart intensity and returns
// when it was injected.
func spotsCrash(ctx context.Context, h *zlink.Host, path string) (time.Time, error) {
	if err := spotsWaitTree(ctx, h, path, "running", func(n supervisor.Node) bool { return n.State == supervisor.Running }); err != nil {
		return time.Time{}, err
	}
	t0 := time.Now()
	if err := faults.InjectPanic(h, path, "bench crash"); err != nil {
		return t0, fmt.Errorf("spots: inject panic: %w", err)
	}
	return t0, nil
}

// spotsWaitFailed waits until n is Failed and returns how long after t0
// it was seen so.
func spotsWaitFailed(ctx context.Context, n *routemesh.Node, t0 time.Time) (time.Duration, error) {
	deadline := time.Now().Add(10 * time.Second)
	for n.State() != routemesh.NodeFailed {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("%w: %s is %v", errNotFailed, n.RID(), n.State())
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(t0), nil
}

// spotsWaitTree polls h's tree until the node at path satisfies ok.
func spotsWaitTree(ctx context.Context, h *zlink.Host, path, what string, ok func(supervisor.Node) bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, found := findTreeNode(h.Tree(), path); found && ok(n) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("spots: %s not %s", path, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func findTreeNode(n supervisor.Node, path string) (supervisor.Node, bool) {
	if n.Path == path {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := findTreeNode(c, path); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}
