package test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// TestSpots_ThreeServersOneClient_TenThousandSpots: three Object Servers
// and one Object Client on a real redis-server, automatic topology. The
// client calls 10,000 counter Spots from parallel callers (bounded
// concurrency): every call is answered, every Spot is activated exactly
// once (OnActivate per (ID, epoch)), no Spot runs on the Object Client,
// and placement spreads them over all three servers.
func TestSpots_ThreeServersOneClient_TenThousandSpots(t *testing.T) {
	const (
		spots   = 10_000
		callers = 64
	)
	srv, _ := spotsRedis(t)
	acts := newSpotsActivations()
	// No peer dies and no lease is lost here: the default liveness and
	// Spot lease (6 s, renewed every second), so that a scheduling stall
	// of the loaded, race-instrumented process is not taken for either.
	// With spotsFast's 1 s lease, a renewal or store probe that fell
	// behind under the load of 10,000 calls can fence a server's Spots
	// mid-run, and fewer than 10,000 are active at the end.
	live := routemesh.DefaultLivenessConfig()
	lease := spot.Config{}
	var servers []*routemesh.Node
	for i := range 3 {
		_, n := spotsNodeLive(t, srv, fmt.Sprintf("os%d", i), routemesh.ObjectServer, lease, live, spotsKind(acts))
		servers = append(servers, n)
	}
	_, client := spotsNodeLive(t, srv, "oc", routemesh.ObjectClient, lease, live)
	spotsReady(t, append(servers, client)...)
	spotsServersKnown(t, client, servers[0].RID(), servers[1].RID(), servers[2].RID())

	ctx := ctxT(t, 60*time.Second)
	owners := make([]string, spots)
	epochs := make([]uint64, spots)
	errs := make([]error, spots)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= spots {
					return
				}
				v, res, err := spotsAddCall(ctx, client, fmt.Sprintf("s-%d", i), 1)
				switch {
				case err != nil:
					errs[i] = err
				case v != 1:
					errs[i] = fmt.Errorf("value %d after one add, want 1", v)
				}
				owners[i], epochs[i] = res.Owner, res.Epoch
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)

	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if failed <= 10 {
				t.Errorf("s-%d: %v", i, err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed", failed, spots)
	}

	// Exactly one activation per Spot, on the server that answered, under
	// the epoch the reply named.
	if got := acts.total(); got != spots {
		t.Errorf("%d activations for %d Spots", got, spots)
	}
	acts.checkOnePerEpoch(t)
	per := map[string]int{}
	for i := range spots {
		id := fmt.Sprintf("s-%d", i)
		a := acts.of(id)
		rids, ok := a[epochs[i]]
		if len(a) != 1 || !ok || len(rids) != 1 || rids[0] != owners[i] {
			t.Errorf("%s: activations %v, reply from %s at epoch %d", id, a, owners[i], epochs[i])
		}
		if owners[i] == client.RID() {
			t.Errorf("%s answered by the Object Client", id)
		}
		per[owners[i]]++
	}

	// The client hosts nothing; the servers host every Spot between them.
	if st := spotsStats(t, client); len(st.Kinds) != 0 {
		t.Errorf("the Object Client has kinds: %+v", st.Kinds)
	}
	var active int64
	var fenced uint64
	for _, s := range servers {
		active += spotsActive(t, s)
		fenced += spotsStats(t, s).Fenced
		if per[s.RID()] == 0 {
			t.Errorf("server %s hosts none of the Spots: spread%s", s.RID(), spread(per))
		}
	}
	if active != spots {
		t.Errorf("%d Spots active on the servers, want %d (%d fenced)", active, spots, fenced)
	}
	if len(per) != 3 {
		t.Errorf("owners: spread%s, want the three servers", spread(per))
	}
	t.Logf("%d Spots, %d callers: %v (%.0f calls/s); spread%s", spots, callers, took.Round(time.Millisecond),
		float64(spots)/took.Seconds(), spread(per))
}
