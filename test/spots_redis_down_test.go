package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// turnLog records every turn of the counter Spots in the order the turns
// ran: the activation that ran it (a serial number given at activation)
// per Spot.
type turnLog struct {
	mu    sync.Mutex
	acts  atomic.Int64
	turns map[string][]int64 // id → activation serial of each turn, in order
}

// downKind is the counter kind whose turns are logged.
func downKind(l *turnLog) *spot.Kind[spotsCounter] {
	k := spot.NewKind(spotsKindName, func(string) *spotsCounter { return &spotsCounter{} })
	serial := map[*spotsCounter]int64{} // each activation's state is its own
	var mu sync.Mutex
	k.OnActivate(func(_ *spot.Context, s *spotsCounter) error {
		mu.Lock()
		serial[s] = l.acts.Add(1)
		mu.Unlock()
		return nil
	})
	spot.On(k, spotsAdd, func(c *spot.Context, s *spotsCounter, n int64) (int64, error) {
		mu.Lock()
		act := serial[s]
		mu.Unlock()
		l.mu.Lock()
		l.turns[c.ID] = append(l.turns[c.ID], act)
		l.mu.Unlock()
		s.N += n
		return s.N, nil
	})
	return k
}

// interleaved returns the Spots whose turns came from an activation again
// after a later one had run turns: two activations serving one Spot at
// the same time.
func (l *turnLog) interleaved() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for id, acts := range l.turns {
		done := map[int64]bool{}
		for i, a := range acts {
			if done[a] {
				bad = append(bad, fmt.Sprintf("%s (activation %d again after %d)", id, a, acts[i-1]))
				break
			}
			if i > 0 && acts[i-1] != a {
				done[acts[i-1]] = true
			}
		}
	}
	return bad
}

var spotTerminalErrs = []error{zlink.ErrPeerLost, zlink.ErrTimeout, zlink.ErrBusy, zlink.ErrNoTarget, spot.ErrFenced}

// startSpotLoad calls random counter Spots from one node on workers
// goroutines and accounts for every call (answers count under RID "").
func startSpotLoad(n *routemesh.Node, spots, workers int) *fault.Ledger {
	return fault.NewLedger(spotTerminalErrs...).Run(workers, time.Second, func(ctx context.Context) (string, error) {
		id := fmt.Sprintf("down-%d", rand.N(spots))
		_, _, err := spotsAddCall(ctx, n, id, 1)
		return "", err
	})
}

// TestSpots_RedisDownOwnersSelfFence: the Location Store goes away under
// Spot load for several lease lengths. Every owner, unable to renew its
// ownership lease, fences its Spots itself before the lease could expire
// (no Spot is active anywhere while the store is down); calls meanwhile
// end with typed errors; once the store is back (empty) the Spots are
// claimed again and served; no Spot was ever served by two activations
// at once, and every call is accounted for.
func TestSpots_RedisDownOwnersSelfFence(t *testing.T) {
	srv := locationtest.StartRedis(t)
	log := &turnLog{turns: map[string][]int64{}}
	_, s1 := spotsNode(t, srv.Addr(), "os", routemesh.ObjectServer, spotsFast, downKind(log))
	_, s2 := spotsNode(t, srv.Addr(), "os", routemesh.ObjectServer, spotsFast, downKind(log))
	_, c := spotsNode(t, srv.Addr(), "oc", routemesh.ObjectClient, spotsFast)
	spotsReady(t, s1, s2, c)
	spotsServersKnown(t, c, s1.RID(), s2.RID())

	const spots = 40
	load := startSpotLoad(c, spots, 4)
	defer load.Stop()
	waitFor(t, "Spots active on both servers", 15*time.Second, func() bool {
		return spotsActive(t, s1) > 5 && spotsActive(t, s2) > 5
	})
	fencedBefore := spotsStats(t, s1).Fenced + spotsStats(t, s2).Fenced

	srv.Stop()
	// The lease is 1 s: every owner must give its Spots up on its own.
	waitFor(t, "every owner fencing its Spots while the store is down", 10*time.Second, func() bool {
		return spotsActive(t, s1) == 0 && spotsActive(t, s2) == 0
	})
	if f := spotsStats(t, s1).Fenced + spotsStats(t, s2).Fenced; f <= fencedBefore {
		t.Fatalf("no activation counted as fenced (%d before, %d after)", fencedBefore, f)
	}
	okDown := load.Account().OK
	// Still down: calls keep ending (typed errors), none is answered.
	ended := load.Account().Ended
	waitFor(t, "calls ending while the store is down", 10*time.Second, func() bool {
		return load.Account().Ended > ended+20
	})
	if got := load.Account().OK; got != okDown {
		t.Fatalf("%d Spot calls answered while no owner holds a lease", got-okDown)
	}

	srv.Restart(t) // empty: every record is claimed again
	load.Mark()
	waitFor(t, "Spots served again after the store came back", 20*time.Second, func() bool {
		return load.Since("") > 200 && spotsActive(t, s1)+spotsActive(t, s2) > 0
	})
	load.Stop()
	a := load.Account()
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Spot calls %d: %d answered, errors %v", a.Ended, a.OK, a.Errs)
	if bad := log.interleaved(); len(bad) > 0 {
		t.Fatalf("Spots served by two activations at once: %v", bad)
	}
}
