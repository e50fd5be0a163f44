package spot

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zlink-go/zlink/routemesh"
)

// ErrManualTopology: Host Relocate is refused on a node with a manual
// connection in its topology (peers address it by endpoint and RID; the
// replacement could not take its place). Nothing was changed.
var ErrManualTopology = errors.New("zlink: blocked: ManualTopologyUnsupported")

// RelocateResult says what Relocate moved.
type RelocateResult struct {
	Moved  int // Spots now on the new host
	Failed int // Spots that could not move, their kind not hosted there included (a following drain moves or releases them)
	Other  int // active Spots of kinds without persistence (they stay until the host drains)
}

// Relocate moves every active Spot of the persistent kinds of node n to
// the Object Server to — the rolling replacement of a host by a new one:
// start the new host, Relocate the old one to it, then drain and stop the
// old one. A node with any manual connection in its topology is refused
// with ErrManualTopology before anything changes.
func Relocate(ctx context.Context, n *routemesh.Node, to string) (RelocateResult, error) {
	rt, err := of(n)
	if err != nil {
		return RelocateResult{}, err
	}
	if manualTopology(n) {
		return RelocateResult{}, fmt.Errorf("%w: %s has a manual topology (fixed RID or AddPeer)", ErrManualTopology, n.RID())
	}
	if ready, draining := n.PeerReady(to); !ready || draining || to == n.RID() {
		return RelocateResult{}, fmt.Errorf("%w: %s is not a ready, non-draining peer", ErrNoTarget, to)
	}
	var res RelocateResult
	var mu sync.Mutex
	sem := make(chan struct{}, drainMoves)
	var wg sync.WaitGroup
	for _, ks := range rt.order {
		ids := ks.dir.ids(1 << 30)
		if ks.reg.persist == nil {
			res.Other += len(ids)
			continue
		}
		if !rt.hostsKind(to, ks.reg.name) {
			// The new host does not host the kind: the drain that follows
			// moves these Spots to servers that do.
			res.Failed += len(ids)
			rt.log.Warn().Str("kind", ks.reg.name).Str("to", to).Int("spots", len(ids)).Msg("spots: relocate target does not host the kind; its Spots stay for the drain")
			continue
		}
		for _, id := range ids {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return res, ctx.Err()
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := rt.move(ctx, ks, id, to)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					res.Failed++
					rt.log.Warn().Err(err).Str("kind", ks.reg.name).Str("id", id).Msg("spots: relocate could not move a Spot")
					return
				}
				res.Moved++
			}()
		}
	}
	wg.Wait()
	return res, nil
}
