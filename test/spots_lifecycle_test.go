package test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// TestSpots_ObjectClientNeverHosts: an Object Client alone has nowhere to
// place a Spot, so its calls end at once with ErrNoTarget (never hosted
// locally, never a hang). Once an Object Server joins, the same calls
// succeed, every one hosted on the server: the replies, the server's
// activations and the Redis records all name the server, and the client
// has no kind and no active Spot.
func TestSpots_ObjectClientNeverHosts(t *testing.T) {
	addr, dir := spotsRedis(t)
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, spotsFast)

	for i := range 5 {
		id := fmt.Sprintf("lonely-%d", i)
		start := time.Now()
		_, _, err := spotsAddCall(ctxT(t, 5*time.Second), client, id, 1)
		if !errors.Is(err, spot.ErrNoTarget) {
			t.Fatalf("%s with no Object Server: %v, want ErrNoTarget", id, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: ErrNoTarget after %v; it should come at once, not at the deadline", id, d)
		}
		if rec := spotRecord(t, dir, id); rec.Owned() || rec.Epoch != 0 {
			t.Fatalf("%s: record %+v after a call with no server, want none", id, rec)
		}
	}

	acts := newSpotsActivations()
	_, server := spotsNode(t, addr, "os", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	spotsReady(t, server, client)
	spotsServersKnown(t, client, server.RID())

	ctx := ctxT(t, 30*time.Second)
	const spots = 100
	for i := range spots {
		id := fmt.Sprintf("lonely-%d", i%5)
		if i >= 5 {
			id = fmt.Sprintf("joined-%d", i)
		}
		v, res, err := spotsAddCall(ctx, client, id, 1)
		if err != nil {
			t.Fatalf("%s after the server joined: %v", id, err)
		}
		if v != 1 || res.Owner != server.RID() || res.Epoch != 1 {
			t.Fatalf("%s: value %d from %s at epoch %d; want 1 from %s at epoch 1", id, v, res.Owner, res.Epoch, server.RID())
		}
		if rec := spotRecord(t, dir, id); rec.OwnerRID != server.RID() || rec.Epoch != 1 {
			t.Fatalf("%s: record %+v, want owner %s epoch 1", id, rec, server.RID())
		}
	}
	if got := acts.total(); got != spots {
		t.Fatalf("%d activations, want %d", got, spots)
	}
	acts.checkOnePerEpoch(t)
	if st := spotsStats(t, client); len(st.Kinds) != 0 {
		t.Fatalf("the Object Client has kinds: %+v", st.Kinds)
	}
	if got := spotsActive(t, server); got != spots {
		t.Fatalf("%d Spots active on the server, want %d", got, spots)
	}
}

// TestSpots_StopReleasesRecords: a graceful Host.Stop of an Object Server
// deactivates its Spots and releases their records in Redis (no owner,
// the epoch kept) before it goes; the next call of each of those Spots
// activates on the other server at once (no wait for the stopped node's
// lease) with the next epoch. The other server's Spots do not move.
func TestSpots_StopReleasesRecords(t *testing.T) {
	addr, dir := spotsRedis(t)
	// The default lease (6 s): a claim that had to wait for it would show.
	slow := spot.Config{}
	const leaseTTL = 6 * time.Second
	acts := newSpotsActivations()
	hA, a := spotsNode(t, addr, "osA", routemesh.ObjectServer, slow, spotsKind(acts))
	_, b := spotsNode(t, addr, "osB", routemesh.ObjectServer, slow, spotsKind(acts))
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, slow)
	spotsReady(t, a, b, client)
	spotsServersKnown(t, client, a.RID(), b.RID())

	ctx := ctxT(t, 60*time.Second)
	was, onA := spotsPlaceSome(t, ctx, client, a, "st", 60)

	stopStart := time.Now()
	stopHost(t, hA)
	t.Logf("Stop of %s with %d active Spots took %v", a.RID(), len(onA), time.Since(stopStart).Round(time.Millisecond))

	for id, p := range was {
		rec := spotRecord(t, dir, id)
		if p.owner == a.RID() {
			if rec.Owned() || rec.OwnerGeneration != 0 || rec.Epoch != p.epoch {
				t.Errorf("%s after Stop of its owner: record %+v, want no owner and epoch %d", id, rec, p.epoch)
			}
		} else if rec.OwnerRID != b.RID() || rec.Epoch != p.epoch {
			t.Errorf("%s on %s: record %+v after the other server stopped", id, b.RID(), rec)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	waitFor(t, "the client dropping "+a.RID(), 10*time.Second, func() bool {
		ready, _ := client.PeerReady(a.RID())
		return !ready
	})
	moveStart := time.Now()
	var slowest time.Duration
	for _, id := range onA {
		start := time.Now()
		v, res, err := spotsAddCall(ctx, client, id, 1)
		d := time.Since(start)
		slowest = max(slowest, d)
		if err != nil {
			t.Fatalf("%s after its owner stopped: %v", id, err)
		}
		if v != 1 || res.Owner != b.RID() || res.Epoch != was[id].epoch+1 {
			t.Fatalf("%s: value %d from %s at epoch %d; want 1 from %s at epoch %d", id, v, res.Owner, res.Epoch, b.RID(), was[id].epoch+1)
		}
		if d > time.Second {
			t.Fatalf("%s took %v to activate elsewhere: a released record needs no lease wait", id, d)
		}
	}
	moved := time.Since(moveStart)
	if moved > leaseTTL/2 {
		t.Fatalf("%d Spots took %v to move: a released record needs no lease wait", len(onA), moved)
	}
	for id, p := range was {
		if p.owner != b.RID() {
			continue
		}
		v, res, err := spotsAddCall(ctx, client, id, 1)
		if err != nil || v != 2 || res.Owner != b.RID() || res.Epoch != p.epoch {
			t.Fatalf("%s on the remaining server: %d from %s at epoch %d, %v; want 2 from %s at epoch %d",
				id, v, res.Owner, res.Epoch, err, b.RID(), p.epoch)
		}
	}
	acts.checkOnePerEpoch(t)
	t.Logf("%d Spots re-activated on %s in %v (slowest call %v)", len(onA), b.RID(), moved.Round(time.Millisecond), slowest.Round(time.Millisecond))
}

// TestSpots_LeaseRefusedFencesAndNewGeneration: the ownership lease of an
// Object Server is deleted from Redis behind its back. Its next renewal is
// refused: it fences the activations of that lease generation (counted),
// starts a new generation, and its Spots answer again, from the same
// server (placement has not changed) under a higher epoch and with a fresh
// activation. Calls made meanwhile end with a reply or ErrFenced. The
// other server is untouched.
func TestSpots_LeaseRefusedFencesAndNewGeneration(t *testing.T) {
	addr, dir := spotsRedis(t)
	acts := newSpotsActivations()
	_, a := spotsNode(t, addr, "osA", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	_, b := spotsNode(t, addr, "osB", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, spotsFast)
	spotsReady(t, a, b, client)
	spotsServersKnown(t, client, a.RID(), b.RID())

	ctx := ctxT(t, 60*time.Second)
	was, onA := spotsPlaceSome(t, ctx, client, a, "lr", 40)
	stA, stB := spotsStats(t, a), spotsStats(t, b)
	if stA.Fenced != 0 || !stA.LeaseValid || stA.LeaseGeneration == 0 {
		t.Fatalf("%s before: %+v", a.RID(), stA)
	}
	oldGen := stA.LeaseGeneration

	// Calls to A's Spots run while its lease goes: each ends with a reply
	// or ErrFenced, exactly once.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var during, fenced int
	var bad []error
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, _, err := spotsAddCall(cctx, client, onA[i%len(onA)], 1)
				cancel()
				mu.Lock()
				during++
				switch {
				case err == nil:
				case errors.Is(err, spot.ErrFenced):
					fenced++
				default:
					bad = append(bad, err)
				}
				mu.Unlock()
			}
		}()
	}

	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := dir.DeleteSpotLease(dctx, location.SpotLease{Mesh: autoMesh, RID: a.RID(), Generation: oldGen})
	cancel()
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("delete the lease of %s: %v", a.RID(), err)
	}
	deleted := time.Now()
	waitFor(t, a.RID()+" starting a new lease generation", 10*time.Second, func() bool {
		st := spotsStats(t, a)
		return st.LeaseGeneration != oldGen && st.LeaseValid && st.Fenced > 0
	})
	noticed := time.Since(deleted)
	waitFor(t, "calls answered under the new generation", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return during > 50
	})
	close(stop)
	wg.Wait()
	for _, err := range bad {
		t.Errorf("a call while the lease went: %v (want a reply or ErrFenced)", err)
	}

	stA = spotsStats(t, a)
	if stA.LeaseGeneration == oldGen || !stA.LeaseValid {
		t.Fatalf("%s after the refusal: %+v", a.RID(), stA)
	}
	if stA.Fenced == 0 || stA.Fenced > uint64(len(onA)) {
		t.Fatalf("%s fenced %d activations; it hosted %d", a.RID(), stA.Fenced, len(onA))
	}
	for _, id := range onA {
		v, res, err := spotsAddCall(ctx, client, id, 1)
		if err != nil {
			t.Fatalf("%s after the new generation: %v", id, err)
		}
		if res.Owner != a.RID() || res.Epoch <= was[id].epoch {
			t.Fatalf("%s: answered by %s at epoch %d; want %s above epoch %d", id, res.Owner, res.Epoch, a.RID(), was[id].epoch)
		}
		if v < 1 {
			t.Fatalf("%s: value %d", id, v)
		}
		rec := spotRecord(t, dir, id)
		if rec.OwnerRID != a.RID() || rec.OwnerGeneration != stA.LeaseGeneration || rec.Epoch != res.Epoch {
			t.Fatalf("%s: record %+v, want owner %s generation %d epoch %d", id, rec, a.RID(), stA.LeaseGeneration, res.Epoch)
		}
		// Every activation of the Spot since the first ran under its own epoch.
		if eps := acts.of(id); len(eps) < 2 {
			t.Fatalf("%s: activations %v; want a new one after the fence", id, eps)
		}
	}
	acts.checkOnePerEpoch(t)

	// The other server kept its lease and its Spots.
	if st := spotsStats(t, b); st.LeaseGeneration != stB.LeaseGeneration || st.Fenced != 0 {
		t.Fatalf("%s: %+v; before %+v", b.RID(), st, stB)
	}
	for id, p := range was {
		if p.owner != b.RID() {
			continue
		}
		v, res, err := spotsAddCall(ctx, client, id, 1)
		if err != nil || v != 2 || res.Owner != b.RID() || res.Epoch != p.epoch {
			t.Fatalf("%s on %s: %d from %s at epoch %d, %v; want 2 at epoch %d", id, b.RID(), v, res.Owner, res.Epoch, err, p.epoch)
		}
	}
	t.Logf("lease generation %d → %d noticed in %v; %d activations fenced; %d calls meanwhile, %d ended ErrFenced",
		oldGen, stA.LeaseGeneration, noticed.Round(time.Millisecond), stA.Fenced, during, fenced)
}

// placed is where a Spot answered: its owner and epoch.
type placed struct {
	owner string
	epoch uint64
}

// spotsPlaceSome calls n Spots (prefix-0 …) once each through client and
// returns where each answered and those on a, failing the test unless
// some answered on a and some elsewhere.
func spotsPlaceSome(t *testing.T, ctx context.Context, client, a *routemesh.Node, prefix string, n int) (map[string]placed, []string) {
	t.Helper()
	was := map[string]placed{}
	var onA []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		_, res, err := spotsAddCall(ctx, client, id, 1)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		was[id] = placed{res.Owner, res.Epoch}
		if res.Owner == a.RID() {
			onA = append(onA, id)
		}
	}
	if len(onA) == 0 || len(onA) == len(was) {
		t.Fatalf("%d of %d Spots on %s: want some on each server", len(onA), len(was), a.RID())
	}
	return was, onA
}
