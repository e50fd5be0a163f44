package test

import (
	"context"
	"errors"
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

// spotLoad calls random counter Spots from one node and accounts for
// every call: each ends once, with a reply or a typed error.
type spotLoad struct {
	issued, ok, okMark atomic.Int64
	mu                 sync.Mutex
	errs               map[string]int
	untyped            []error
	stop               chan struct{}
	wg                 sync.WaitGroup
}

var spotTerminalErrs = []error{zlink.ErrPeerLost, zlink.ErrTimeout, zlink.ErrBusy, zlink.ErrNoTarget, spot.ErrFenced}

func startSpotLoad(n *routemesh.Node, spots, workers int) *spotLoad {
	l := &spotLoad{errs: map[string]int{}, stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.issued.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _, err := spotsAddCall(ctx, n, fmt.Sprintf("down-%d", r.IntN(spots)), 1)
				cancel()
				l.record(err)
			}
		}()
	}
	return l
}

func (l *spotLoad) record(err error) {
	if err == nil {
		l.ok.Add(1)
		l.okMark.Add(1)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, want := range spotTerminalErrs {
		if errors.Is(err, want) {
			l.errs[want.Error()]++
			return
		}
	}
	l.untyped = append(l.untyped, err)
}

// end stops the load and reconciles the accounts.
func (l *spotLoad) end(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	ended := l.ok.Load()
	for _, n := range l.errs {
		ended += int64(n)
	}
	ended += int64(len(l.untyped))
	if ended != l.issued.Load() {
		t.Fatalf("%d Spot calls issued, %d ended", l.issued.Load(), ended)
	}
	if len(l.untyped) > 0 {
		t.Fatalf("%d Spot calls ended with an untyped error, first: %v", len(l.untyped), l.untyped[0])
	}
	t.Logf("Spot calls %d: %d answered, errors %v", ended, l.ok.Load(), l.errs)
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
	defer func() {
		select {
		case <-load.stop:
		default:
			close(load.stop)
			load.wg.Wait()
		}
	}()
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
	okDown := load.ok.Load()
	// Still down: calls keep ending (typed errors), none is answered.
	issued := load.issued.Load()
	waitFor(t, "calls ending while the store is down", 10*time.Second, func() bool {
		return load.issued.Load() > issued+20
	})
	if got := load.ok.Load(); got != okDown {
		t.Fatalf("%d Spot calls answered while no owner holds a lease", got-okDown)
	}

	srv.Restart(t) // empty: every record is claimed again
	load.okMark.Store(0)
	waitFor(t, "Spots served again after the store came back", 20*time.Second, func() bool {
		return load.okMark.Load() > 200 && spotsActive(t, s1)+spotsActive(t, s2) > 0
	})
	load.end(t)
	if bad := log.interleaved(); len(bad) > 0 {
		t.Fatalf("Spots served by two activations at once: %v", bad)
	}
}
