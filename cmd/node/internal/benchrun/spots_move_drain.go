package benchrun

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// spotsMoveDrain measures Node.Drain of an Object Server hosting N active
// Spots of the persistent kind while another server takes them (hand-off,
// no caller error), beside the same N handled without moves (stop, then
// first calls on another server restore them).
func spotsMoveDrain(ctx context.Context, w io.Writer, plan spotsMovePlan) error {
	n := plan.drainSpots
	if err := spotsMoveReleaseBaseline(ctx, w, plan); err != nil {
		return err
	}

	logs := newMoveLogs()
	c := newMoveCluster()
	defer c.stop()
	old, err := c.startMoveNode(ctx, "drain0", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	actEl, err := moveActivate(ctx, old, plan.actCallers, n, "drain", 1)
	if err != nil {
		return err
	}
	neu, err := c.startMoveNode(ctx, "drain1", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	if err := moveSettle(ctx, old, neu); err != nil {
		return err
	}
	if a := moveActive(old); a != int64(n) {
		return fmt.Errorf("spots-move: %d Spots active on %s before the drain, want %d", a, old.RID(), n)
	}
	before, _ := spot.StatsOf(old)

	// Progress of the hand-off, read from the draining node's move count.
	var first, half, all atomic.Int64
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(polled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			st, _ := spot.StatsOf(old)
			m, at := int64(st.Moves-before.Moves), int64(time.Since(t0))
			if m > 0 {
				first.CompareAndSwap(0, at)
			}
			if m >= int64(n+1)/2 {
				half.CompareAndSwap(0, at)
			}
			if m >= int64(n) {
				all.CompareAndSwap(0, at)
				return
			}
			select {
			case <-stopPoll:
				return
			case <-tick.C:
			}
		}
	}()
	drainErr := old.Drain(ctx)
	total := time.Since(t0)
	close(stopPoll)
	<-polled
	after, _ := spot.StatsOf(old)
	moved := int(after.Moves - before.Moves)
	if all.Load() == 0 {
		all.Store(int64(total)) // the poller missed the last one, or not every Spot moved
	}
	lastMove := time.Duration(all.Load())
	fmt.Fprintf(w, "drain activations n=%d callers=%d %8.0f activations/s  (first calls on %s before it drains: claim, state read (none yet), spawn, first turn)\n",
		n, plan.actCallers, float64(n)/actEl.Seconds(), old.RID())
	fmt.Fprintf(w, "drain handoff n=%d moved=%d %8.0f moves/s  total %v  (Node.Drain of %s hosting %d active Spots of kind %q, %s takes them: "+
		"moves/s = moved / time to the last move (%v; first %v, half %v); total = until Node.Drain returned (drain error: %v))\n",
		n, moved, float64(moved)/lastMove.Seconds(), total.Round(time.Millisecond), old.RID(), n, moveKind, neu.RID(),
		lastMove.Round(time.Millisecond), time.Duration(first.Load()).Round(time.Millisecond), time.Duration(half.Load()).Round(time.Millisecond), drainErr)

	// Every Spot answers from the new server with the state it had.
	var ok, wrong, failed atomic.Int64
	var errs moveErrs
	checkEl, _ := spotsParallel(ctx, []*routemesh.Node{neu}, plan.actCallers, n, func(ctx context.Context, nd *routemesh.Node, i int) error {
		id := spotID("drain", i)
		cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
		v, res, err := moveCall(cctx, nd, id)
		cancel()
		switch {
		case err != nil:
			failed.Add(1)
			errs.add(time.Since(t0), id, err)
		case v != 2 || res.Owner != neu.RID():
			wrong.Add(1)
		default:
			ok.Add(1)
		}
		return nil
	})
	stNew, _ := spot.StatsOf(neu)
	fmt.Fprintf(w, "drain check: %d of %d Spots answered from %s with their state (count 2), %d with another count or owner, %d errors (%s); "+
		"active there %d, on %s %d; saves on %s %d, store write errors %d; calls took %v\n",
		ok.Load(), n, neu.RID(), wrong.Load(), failed.Load(), errs.summary(), moveActive(neu), old.RID(), moveActive(old),
		old.RID(), after.Saves-before.Saves, after.SaveErrors+stNew.SaveErrors, checkEl.Round(time.Millisecond))
	fmt.Fprintf(w, "drain runtime warnings and errors logged: %s\n", logs.line())
	if drainErr != nil {
		return fmt.Errorf("spots-move: drain of %s: %w", old.RID(), drainErr)
	}
	return nil
}

// spotsMoveReleaseBaseline is the same N handled without moves: the
// node stops (Host.Stop saves and releases every Spot), then a new server
// activates them by first calls, each restoring its state. Then a drain
// with no other server to take its Spots, on a few of them.
func spotsMoveReleaseBaseline(ctx context.Context, w io.Writer, plan spotsMovePlan) error {
	n := plan.drainSpots
	logs := newMoveLogs()
	c := newMoveCluster()
	defer c.stop()
	old, err := c.startMoveNode(ctx, "release0", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	if _, err := moveActivate(ctx, old, plan.actCallers, n, "release", 1); err != nil {
		return err
	}
	oldRID := old.RID()
	sctx, cancel := context.WithTimeout(ctx, moveDrainTimeout)
	t0 := time.Now()
	err = c.hosts[0].Stop(sctx)
	relEl := time.Since(t0)
	cancel()
	c.hosts, c.nodes = c.hosts[1:], c.nodes[1:]
	if err != nil {
		return fmt.Errorf("spots-move: stop of %s: %w", oldRID, err)
	}
	neu, err := c.startMoveNode(ctx, "release1", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	actEl, err := moveActivate(ctx, neu, plan.actCallers, n, "release", 2)
	if err != nil {
		return fmt.Errorf("spots-move: re-activation after the stop: %w", err)
	}
	fmt.Fprintf(w, "drain baseline stop n=%d %8.0f Spots/s  %v  (Host.Stop of %s: no move, each Spot is saved and released)\n",
		n, float64(n)/relEl.Seconds(), relEl.Round(time.Millisecond), oldRID)
	fmt.Fprintf(w, "drain baseline restore n=%d callers=%d %8.0f activations/s  %v  (then first calls on %s activate them there: claim, state read and decode, spawn, turn; "+
		"stop + restore %.0f Spots/s; meanwhile a caller of a released Spot waits or fails)\n",
		n, plan.actCallers, float64(n)/actEl.Seconds(), actEl.Round(time.Millisecond), neu.RID(), float64(n)/(relEl+actEl).Seconds())
	if l := logs.line(); l != "0" {
		fmt.Fprintf(w, "drain baseline runtime warnings and errors logged: %s\n", l)
	}
	return spotsMoveDrainAlone(ctx, w, plan)
}

// spotsMoveDrainAlone times Node.Drain of a server that nobody can take
// Spots from: the Spots are saved and released, after the runtime has
// looked for a target for each.
func spotsMoveDrainAlone(ctx context.Context, w io.Writer, plan spotsMovePlan) error {
	n := plan.aloneSpots
	logs := newMoveLogs()
	c := newMoveCluster()
	defer c.stop()
	alone, err := c.startMoveNode(ctx, "alone0", routemesh.ObjectServer, logs)
	if err != nil {
		return err
	}
	if _, err := moveActivate(ctx, alone, 1, n, "alone", 1); err != nil {
		return err
	}
	t0 := time.Now()
	err = alone.Drain(ctx)
	el := time.Since(t0)
	if err != nil {
		return fmt.Errorf("spots-move: drain of %s alone: %w", alone.RID(), err)
	}
	fmt.Fprintf(w, "drain alone n=%d %v  %v per Spot  (Node.Drain of %s with no other Object Server: nothing to hand off; "+
		"the Spots are saved and released; still active after: %d; discovery poll %v)\n",
		n, el.Round(time.Millisecond), (el / time.Duration(n)).Round(time.Millisecond), alone.RID(), moveActive(alone), spotsSteady.discovery.Poll)
	return nil
}

// moveActivate calls count Spots prefix-<i> from perNode goroutines on n,
// each answer checked: count want, owner n.
func moveActivate(ctx context.Context, n *routemesh.Node, perNode, count int, prefix string, want int64) (time.Duration, error) {
	el, err := spotsParallel(ctx, []*routemesh.Node{n}, perNode, count, func(ctx context.Context, nd *routemesh.Node, i int) error {
		v, res, err := moveCall(ctx, nd, spotID(prefix, i))
		switch {
		case err != nil:
			return err
		case v != want || res.Owner != n.RID():
			return fmt.Errorf("spots-move: %s answered %d from %s, want %d from %s", spotID(prefix, i), v, res.Owner, want, n.RID())
		}
		return nil
	})
	if err != nil {
		return el, fmt.Errorf("spots-move: activations on %s: %w", n.RID(), err)
	}
	return el, nil
}

// moveActive is the number of active Spots of the persistent kind on n.
func moveActive(n *routemesh.Node) int64 {
	st, err := spot.StatsOf(n)
	if err != nil {
		return -1
	}
	for _, k := range st.Kinds {
		if k.Kind == moveKind {
			return k.Active
		}
	}
	return -1
}

// moveSettle waits until from places new Spots on to (its listing of the
// store shows to): fresh IDs of the non-persistent kind are called from
// from until one lands on to (the others stay active where they are).
func moveSettle(ctx context.Context, from, to *routemesh.Node) error {
	payload := make([]byte, spotsPayloadSize)
	deadline := time.Now().Add(15 * time.Second)
	for k := 0; ; k++ {
		if time.Now().After(deadline) {
			return fmt.Errorf("spots-move: %s places no new Spot on %s", from.RID(), to.RID())
		}
		cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
		res, err := spotCall(cctx, from, spotID("settle-"+to.RID(), k), payload)
		cancel()
		if err != nil {
			return fmt.Errorf("spots-move: settle probe from %s: %w", from.RID(), err)
		}
		if res.Owner == to.RID() {
			return nil
		}
		if k%16 == 15 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}
