package spot

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// ErrNotFound: nobody owns the Spot (Owner): its ownership record is
// absent (never claimed) or released.
var ErrNotFound = zerr.ErrNoOwner

// Activity says whether a Spot is active on its owner (OwnerInfo.Active).
type Activity string

const (
	// ActiveYes: the owner is the node asked, and the Spot's activation
	// under the recorded generation and epoch is in its directory (it may
	// be deactivating).
	ActiveYes Activity = "yes"
	// ActiveNo: the Spot is not active on the owner: the owner is the
	// node asked and holds no activation of that record, or the owner's
	// lease is gone (an owner ends its activations before its lease
	// expires in the store, rule R2 of docs/spots.md).
	ActiveNo Activity = "no"
	// ActiveUnknown: the owner is another node whose lease is live. It
	// holds the record, so the Spot is active there or on its way in or
	// out; only the owner knows which, and Owner does not ask it.
	ActiveUnknown Activity = "unknown"
)

// OwnerInfo is what Owner found about one Spot.
type OwnerInfo struct {
	Mesh string `json:"mesh"`
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// RID and Generation name the owner: its RID and the generation of
	// its ownership lease. Empty and 0 when nobody owns the Spot.
	RID        string `json:"rid"`
	Generation uint64 `json:"generation"`
	// Epoch is the record's fencing epoch (kept by a release: the last
	// owner's epoch when nobody owns the Spot; 0 when never claimed).
	Epoch uint64 `json:"epoch"`
	// LeaseLive: the owner's lease is live in the store now.
	LeaseLive bool `json:"lease_live"`
	// Local: the owner is the node asked.
	Local bool `json:"local"`
	// Active says whether the Spot is active on the owner.
	Active Activity `json:"active"`
}

// Owner reads who owns the Spot (kind, id) of node n's mesh: one read of
// the ownership record and, when it names another node, one read of that
// owner's lease. It never claims, activates, renews or tombstones
// anything, and works on any node with a Location Store (the kind need
// not be hosted on n). When nobody owns the Spot it returns an error
// matching ErrNotFound, with the record's epoch in the OwnerInfo.
//
// The answer is a snapshot: the Spot may move, deactivate or be claimed
// right after. Errors of the store come back as they are (wrapped), e.g.
// location.ErrCorrupt for a record this runtime did not write, and
// location.ErrInvalid for a kind or ID a record cannot have.
func Owner(ctx context.Context, n *routemesh.Node, kind, id string) (OwnerInfo, error) {
	if n == nil {
		return OwnerInfo{}, fmt.Errorf("%w: nil node", ErrNotEnabled)
	}
	rt, _ := of(n) // nil: no Spot runtime here; the store still answers
	var dir location.SpotDirectory
	switch {
	case rt != nil:
		dir = rt.dir
	case n.Store() != nil:
		dir = n.Store()
	default:
		return OwnerInfo{}, fmt.Errorf("%w: mesh %s has no Location Store to read Spot owners from", ErrNotEnabled, n.Mesh())
	}
	info := OwnerInfo{Mesh: n.Mesh(), Kind: kind, ID: id, Active: ActiveNo}
	rec, err := dir.SpotRecord(ctx, n.Mesh(), kind, id)
	if err != nil {
		return info, fmt.Errorf("spot %s/%s: owner: %w", kind, id, err)
	}
	info.Epoch = rec.Epoch
	if !rec.Owned() {
		return info, fmt.Errorf("%w: %s/%s (epoch %d)", ErrNotFound, kind, id, rec.Epoch)
	}
	info.RID, info.Generation = rec.OwnerRID, rec.OwnerGeneration
	info.Local = rec.OwnerRID == n.RID()
	if info.Local && rt != nil {
		gen, valid := rt.lease.holder(time.Now())
		info.LeaseLive = valid && gen == rec.OwnerGeneration
		if info.LeaseLive && rt.activeAs(kind, id, rec) {
			info.Active = ActiveYes
		}
		return info, nil
	}
	live, err := dir.SpotLeaseLive(ctx, location.SpotLease{Mesh: n.Mesh(), RID: rec.OwnerRID, Generation: rec.OwnerGeneration})
	if err != nil {
		return info, fmt.Errorf("spot %s/%s: owner %s lease: %w", kind, id, rec.OwnerRID, err)
	}
	info.LeaseLive = live
	if live && !info.Local {
		info.Active = ActiveUnknown
	}
	return info, nil
}

// activeAs reports whether this node holds an activation of (kind, id)
// claimed as rec (same lease generation and epoch) that was not fenced.
func (rt *runtime) activeAs(kind, id string, rec location.Ownership) bool {
	ks := rt.kinds[kind]
	if ks == nil {
		return false
	}
	act := ks.dir.get(id)
	return act != nil && act.gen == rec.OwnerGeneration && act.epoch == rec.Epoch && !act.fenced.Load()
}
