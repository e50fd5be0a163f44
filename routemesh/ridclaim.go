package routemesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/location"
)

// ErrRIDInUse refuses to start a node under a fixed RID that a live
// lifecycle of the same mesh holds: its descriptor is still being renewed.
var ErrRIDInUse = errors.New("zlink: RID in use by a live node of this mesh")

// waitForRID makes sure no other lifecycle holds this node's fixed RID
// before the node publishes anything. A descriptor of another generation
// under the RID is either a live holder (it keeps renewing) or one that
// died (its lease runs out within the TTL): Start waits, bounded by
// 1.5 × DescriptorTTL and logged, for it to go, and refuses with
// ErrRIDInUse when it stays. Generated RIDs are not checked (they are
// random), nor is anything when the store cannot be read (the lease keeps
// trying, as for any start with the store down).
func (n *Node) waitForRID(ctx context.Context) error {
	if n.store == nil || n.cfg.RID == "" {
		return nil
	}
	ttl := n.cfg.DescriptorTTL
	deadline := time.Now().Add(ttl + ttl/2)
	tick := time.NewTicker(max(ttl/10, 10*time.Millisecond))
	defer tick.Stop()
	logged := false
	for {
		rctx, cancel := context.WithTimeout(ctx, max(ttl, time.Second))
		d, err := n.store.GetDescriptor(rctx, n.cfg.Mesh, n.rid)
		cancel()
		switch {
		case errors.Is(err, location.ErrNotFound), err != nil && ctx.Err() == nil:
			return nil
		case err != nil:
			return err
		case d.Generation == n.gen:
			return nil
		case !time.Now().Before(deadline):
			return &ConfigError{Mesh: n.cfg.Mesh, Err: ErrRIDInUse,
				Detail: fmt.Sprintf("RID %q is held by the node at %s (generation %x), which keeps its lease alive", n.rid, d.Endpoint, d.Generation)}
		case !logged:
			logged = true
			n.log.Warn().Str("holder_endpoint", d.Endpoint).Uint64("holder_generation", d.Generation).Dur("wait", time.Until(deadline)).
				Msg("RID held by another lifecycle; waiting for its lease to run out")
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
