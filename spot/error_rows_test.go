package spot_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// The rows of docs/spots.md's error table that say "did not run": a call
// that ends with ErrCycle, ErrRole or ErrNoTarget (an unknown kind) ran no
// handler; ErrHandler ran it once.
func TestSpotErrorRows_DidNotRunAndRan(t *testing.T) {
	var gets, booms atomic.Int64
	k := spot.NewKind("counter", func(string) *counter { return &counter{} })
	spot.On(k, getP, func(_ *spot.Context, s *counter, _ struct{}) (int64, error) { gets.Add(1); return s.N, nil })
	spot.On(k, boomP, func(_ *spot.Context, s *counter, _ struct{}) (int64, error) {
		booms.Add(1)
		return 0, errors.New("boom")
	})
	spot.On(k, callP, func(c *spot.Context, s *counter, r callOut) (int64, error) {
		return spot.Call(c, c.Node, r.Kind, r.Target, getP, struct{}{})
	})
	store := location.NewMemory()
	_, os := startNode(t, store, "os", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{k}})
	_, none := startNode(t, store, "none", nodeOpts{role: routemesh.ObjectNone})
	waitSpots(t, os, none)
	ctx := ctxT(t, 20*time.Second)

	// a → a on a kind that is not reentrant: the inner call ends ErrCycle.
	if _, err := spot.Call(ctx, os, "counter", "a", callP, callOut{Kind: "counter", Target: "a"}); !errors.Is(err, spot.ErrCycle) {
		t.Fatalf("a → a: %v, want ErrCycle", err)
	}
	if _, err := spot.Call(ctx, none, "counter", "a", getP, struct{}{}); !errors.Is(err, spot.ErrRole) {
		t.Fatalf("a call from role None: %v, want ErrRole", err)
	}
	if _, err := spot.Call(ctx, os, "nokind", "a", getP, struct{}{}); !errors.Is(err, spot.ErrNoTarget) {
		t.Fatalf("an unknown kind: %v, want ErrNoTarget", err)
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("get ran %d times; every call to it was refused", n)
	}
	if _, err := spot.Call(ctx, os, "counter", "a", boomP, struct{}{}); !errors.Is(err, spot.ErrHandler) || booms.Load() != 1 {
		t.Fatalf("a handler error: %v after %d runs; want ErrHandler after 1", err, booms.Load())
	}
}
