package spot_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/supervisor"
)

// Every actor of the Spot runtime comes back whole after a panic: calls
// keep ending with a reply or a typed error, and succeed again after the
// restart.
func TestSpot_ChaosEveryActorKindRecovers(t *testing.T) {
	store := location.NewMemory()
	led := newLedger()
	var hosts []*zlink.Host
	var servers []*routemesh.Node
	for i := range 2 {
		h, n := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer,
			kinds: []spot.Registration{counterKind(led, 0)}})
		hosts, servers = append(hosts, h), append(servers, n)
	}
	_, client := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, client)...)

	ctx := ctxT(t, 60*time.Second)
	ids := make([]string, 20)
	var victimID string
	for i := range ids {
		ids[i] = fmt.Sprintf("c-%d", i)
		_, res, err := callAdd(ctx, client, ids[i], 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner == servers[0].RID() && victimID == "" {
			victimID = ids[i]
		}
	}
	if victimID == "" {
		t.Fatal("no Spot on the first server")
	}

	var mu sync.Mutex
	var bad []error
	ok := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
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
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, _, err := callAdd(cctx, client, ids[i%len(ids)], 1)
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, spot.ErrHandler), errors.Is(err, zlink.ErrBusy), errors.Is(err, zlink.ErrPeerLost),
					errors.Is(err, spot.ErrNoTarget), errors.Is(err, zlink.ErrShuttingDown):
				default:
					bad = append(bad, err)
				}
				mu.Unlock()
			}
		}()
	}
	okNow := func() int { mu.Lock(); defer mu.Unlock(); return ok }

	base := meshbridge.MeshActorPath(servers[0]) + "/spots"
	for _, path := range []string{base + "/counter/" + victimID, base + "/counter", base + "/lease", base + "/members", base} {
		before := okNow()
		if err := faults.InjectPanic(hosts[0], path, "chaos"); err != nil {
			t.Fatalf("inject %s: %v", path, err)
		}
		if path != base+"/counter/"+victimID { // a folded kind lists no Spot in the tree
			waitFor(t, "restart of "+path, 5*time.Second, func() bool {
				n, found := find(hosts[0].Tree(), path)
				return found && n.Restarts > 0
			})
		}
		waitFor(t, "calls succeed after "+path, 10*time.Second, func() bool { return okNow() > before+20 })
		// The restarted Spot answers again.
		if _, _, err := callAdd(ctx, client, victimID, 1); err != nil {
			t.Fatalf("after %s: %v", path, err)
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d calls ended with an untyped or unexpected error, first: %v", len(bad), bad[0])
	}
}

func find(n supervisor.Node, path string) (supervisor.Node, bool) {
	if n.Path == path {
		return n, true
	}
	for _, c := range n.Children {
		if f, ok := find(c, path); ok {
			return f, true
		}
	}
	return supervisor.Node{}, false
}
