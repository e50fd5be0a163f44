package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// WaitReady returns once node n can serve Spot calls: it has listed the
// mesh's Object Servers since the call (so placement knows the ones that
// are up now), some ready one is known for placement and, on an Object
// Server, its ownership lease is valid and its descriptor published. It returns ctx's error
// (wrapped in ErrTimeout or ErrCancelled) otherwise.
func WaitReady(ctx context.Context, n *routemesh.Node) error {
	rt, err := of(n)
	if err != nil {
		return err
	}
	if rt.role == routemesh.ObjectNone {
		return fmt.Errorf("%w: a MeshNode with object role None calls no Spot", ErrRole)
	}
	// A listing of the mesh made after this call, so placement knows the
	// Object Servers that are up now, not only the ones of the last poll.
	before := rt.listed.Load()
	if ref := rt.membRef.Load(); ref != nil {
		_ = ref.Tell(&refreshMembers{})
	}
	for {
		if rt.listed.Load() > before && rt.ready() {
			return nil
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("spots of %s not ready (%s): %w", n.RID(), rt.notReady(before), err)
		}
	}
}

func (rt *runtime) ready() bool {
	if rt.stopping.Load() {
		return false
	}
	if rt.role == routemesh.ObjectServer {
		if _, valid := rt.lease.holder(time.Now()); !valid || !published(rt.n) {
			return false
		}
	}
	_, ok := rt.place("", "x")
	return ok
}

// notReady says which condition of WaitReady is still missing.
func (rt *runtime) notReady(before uint64) string {
	switch {
	case rt.stopping.Load():
		return "stopping"
	case rt.listed.Load() <= before:
		return "no listing of the mesh yet"
	}
	if rt.role == routemesh.ObjectServer {
		if _, valid := rt.lease.holder(time.Now()); !valid {
			return "the ownership lease is not valid"
		}
		if !published(rt.n) {
			return "the descriptor is not published"
		}
	}
	return fmt.Sprintf("no ready Object Server among %d listed", len(*rt.members.Load()))
}
