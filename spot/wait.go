package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// WaitReady returns once node n can serve Spot calls: some ready Object
// Server is known for placement and, on an Object Server, its ownership
// lease is valid and its descriptor published. It returns ctx's error
// (wrapped in ErrTimeout or ErrCancelled) otherwise.
func WaitReady(ctx context.Context, n *routemesh.Node) error {
	rt, err := of(n)
	if err != nil {
		return err
	}
	if rt.role == routemesh.ObjectNone {
		return fmt.Errorf("%w: a MeshNode with object role None calls no Spot", ErrRole)
	}
	for {
		if rt.ready() {
			return nil
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("spots of %s not ready: %w", n.RID(), err)
		}
	}
}

func (rt *runtime) ready() bool {
	if rt.stopping.Load() {
		return false
	}
	if rt.role == routemesh.ObjectServer {
		if _, valid := rt.lease.holder(time.Now()); !valid || !rt.n.Published() {
			return false
		}
	}
	_, ok := rt.place("", "x")
	return ok
}
