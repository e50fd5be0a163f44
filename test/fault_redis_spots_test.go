package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_RedisDownSpotOwnersSelfFence: two Object Servers and an Object
// Client on one redis-server, parallel callers on a few dozen counter
// Spots. The store is killed under that load (it comes back empty). Then:
//   - both owners self-fence (their lease no longer valid) before it can
//     have expired in the store: no call issued later than one lease TTL
//     after the store went away is answered until it is back;
//   - once the store is back, leases and descriptors are republished and
//     every Spot answers again;
//   - every call ended once, with a reply or a typed error; per Spot and
//     per store incarnation (the store came back empty, so epochs start
//     again at 1, as docs/spots.md states), an epoch is never answered by
//     two owners and never goes back, and each (Spot, epoch) was activated
//     once.
func TestFault_RedisDownSpotOwnersSelfFence(t *testing.T) {
	const (
		spots       = 48
		workers     = 8
		callTimeout = 2 * time.Second
	)
	srv := locationtest.StartRedis(t)
	addr := srv.Addr()
	acts := newSpotsActivations()
	_, a := spotsNode(t, addr, "osA", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	_, b := spotsNode(t, addr, "osB", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, spotsFast)
	spotsReady(t, a, b, client)
	spotsServersKnown(t, client, a.RID(), b.RID())
	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("rd-%d", i)
	}
	load := startSpotsLoad(client, ids, workers, callTimeout)
	defer load.stop()
	waitFor(t, "every Spot answered", 20*time.Second, func() bool { n, _ := load.answered(""); return n == spots })

	downAt := time.Now()
	srv.Stop()
	var fenced time.Duration
	waitFor(t, "both owners self-fenced", 10*time.Second, func() bool {
		return !spotsStats(t, a).LeaseValid && !spotsStats(t, b).LeaseValid
	})
	fenced = time.Since(downAt)
	// Stay down for a few lease TTLs: any owner still answering would
	// now be running on an expired lease.
	waitFor(t, "the outage to last three lease TTLs", 10*time.Second, func() bool { return time.Since(downAt) > 3*spotsFast.LeaseTTL })
	before := map[string]map[uint64][]string{}
	for _, id := range ids {
		before[id] = acts.of(id)
	}
	upAt := time.Now()
	srv.Restart(t)
	waitFor(t, "both owners' leases valid again", 15*time.Second, func() bool {
		return spotsStats(t, a).LeaseValid && spotsStats(t, b).LeaseValid
	})
	relet := time.Since(upAt)
	waitFor(t, "every Spot answering again", 20*time.Second, func() bool {
		seen := map[string]bool{}
		for _, c := range load.snapshot() {
			if c.err == nil && c.issued.After(upAt) {
				seen[c.id] = true
			}
		}
		return len(seen) == spots
	})
	back := time.Since(upAt)
	if !load.stop() {
		t.Fatal("a call did not end within 10 s of its deadline")
	}

	calls := load.snapshot()
	if int64(len(calls)) != load.issued.Load() {
		t.Fatalf("%d calls issued, %d ended", load.issued.Load(), len(calls))
	}
	errs := map[string]int{}
	byID := [2]map[string][]spotsCallRec{{}, {}} // before the restart, after
	answeredAfter := map[string]bool{}
	for _, c := range calls {
		if c.err != nil {
			kind := spotsErrKind(c.err)
			errs[kind]++
			if kind == "untyped" {
				t.Errorf("%s: untyped error %v", c.id, c.err)
			}
			continue
		}
		if c.issued.After(downAt.Add(spotsFast.LeaseTTL)) && c.done.Before(upAt) {
			t.Errorf("%s: issued %v after the store went away (lease TTL %v), answered by %s@%d before it came back",
				c.id, c.issued.Sub(downAt).Round(time.Millisecond), spotsFast.LeaseTTL, c.owner, c.epoch)
		}
		if c.issued.After(upAt) {
			answeredAfter[c.id] = true
		}
		// Every activation of the first incarnation was fenced before the
		// restart: a reply received after it comes from the second.
		w := 0
		if c.done.After(upAt) {
			w = 1
		}
		byID[w][c.id] = append(byID[w][c.id], c)
	}
	for _, id := range ids {
		checkSpotReplies(t, id, byID[0][id])
		if !answeredAfter[id] {
			t.Errorf("%s: not answered after the store came back", id)
			continue
		}
		checkSpotReplies(t, id, byID[1][id])
		// One activation per (Spot, epoch) in each incarnation.
		for e, rids := range acts.of(id) {
			if n := len(before[id][e]); n > 1 || len(rids)-n > 1 {
				t.Errorf("%s epoch %d: activated %d times before the restart and %d after: %v", id, e, n, len(rids)-n, rids)
			}
		}
	}
	stA, stB := spotsStats(t, a), spotsStats(t, b)
	t.Logf("%d calls, errors %v; owners self-fenced %v after the store went away (lease TTL %v); leases back %v and every Spot answered %v after it returned; fenced %d+%d, overlaps %d+%d, store incarnations %d+%d",
		len(calls), errs, fenced.Round(time.Millisecond), spotsFast.LeaseTTL, relet.Round(time.Millisecond), back.Round(time.Millisecond),
		stA.Fenced, stB.Fenced, stA.Overlaps, stB.Overlaps, stA.StoreIncarnations, stB.StoreIncarnations)
	if stA.Overlaps+stB.Overlaps != 0 {
		t.Errorf("overlaps counted: %d + %d", stA.Overlaps, stB.Overlaps)
	}
}
