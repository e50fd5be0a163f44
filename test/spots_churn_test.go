package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// TestSpots_IdleChurnKeepsAnswering: Spots with a short idle timeout under
// a stream of calls that rests half of them at a time deactivate and
// reactivate over and over, and calls often arrive while a Spot is
// deactivating (they wait and reactivate it).
// Every call is answered, every activation has its own epoch, and a
// graceful Stop afterwards ends promptly and releases every record.
func TestSpots_IdleChurnKeepsAnswering(t *testing.T) {
	const (
		spots       = 100
		workers     = 16
		callTimeout = 3 * time.Second
		churn       = 3 * time.Second
	)
	addr, dir := spotsRedis(t)
	acts := newSpotsActivations()
	kind := spotsKind(acts).SetIdleTimeout(20 * time.Millisecond)
	hA, a := spotsNode(t, addr, "osA", routemesh.ObjectServer, spotsFast, kind)
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, spotsFast)
	spotsReady(t, a, client)
	spotsServersKnown(t, client, a.RID())

	var mu sync.Mutex
	var calls, failed int
	lastEpoch := map[string]uint64{}
	var wg sync.WaitGroup
	// The calls alternate between the two halves of the Spots every rest:
	// each half rests, deactivates, and is called again. Idle Spots are
	// swept on the Spot clock (every 100 ms with spotsFast), so a rest of
	// 150 ms holds a sweep that finds the resting half idle for its 20 ms.
	// Calls spread over all the Spots at once would leave none idle for
	// 20 ms on a machine fast enough to call each of them more often than
	// that.
	const rest = 150 * time.Millisecond
	begin := time.Now()
	end := begin.Add(churn)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				half := int(time.Since(begin)/rest) % 2
				id := fmt.Sprintf("churn-%d", half*spots/2+rand.IntN(spots/2))
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				_, res, err := spotsAddCall(ctx, client, id, 1)
				cancel()
				mu.Lock()
				calls++
				if err != nil {
					failed++
					if failed <= 5 {
						t.Errorf("%s: %v", id, err)
					}
				} else {
					lastEpoch[id] = max(lastEpoch[id], res.Epoch)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed > 0 {
		t.Fatalf("%d of %d calls failed under idle churn", failed, calls)
	}
	acts.checkOnePerEpoch(t)
	st := spotsStats(t, a)
	if st.Kinds[0].Deactivations == 0 {
		t.Fatalf("no idle deactivation in %v: %+v", churn, st.Kinds)
	}

	start := time.Now()
	stopHost(t, hA)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	for id := range lastEpoch {
		if rec := spotRecord(t, dir, id); rec.Owned() || rec.Epoch < lastEpoch[id] {
			t.Errorf("%s after Stop: record %+v, want no owner and epoch ≥ %d", id, rec, lastEpoch[id])
		}
	}
	t.Logf("%d calls; %d activations, %d deactivations on %s", calls, st.Kinds[0].Activations, st.Kinds[0].Deactivations, a.RID())
}
