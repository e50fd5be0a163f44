package spot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
	"github.com/zlink-go/zlink/location"
)

// claimResult is how a claim ended.
type claimResult struct {
	epoch uint64 // activate under this epoch (ok)
	gen   uint64 // the lease generation it was claimed under
	ok    bool
	inc   string                // the incarnation of the shard that took the claim
	sent  time.Time             // when the claim write was sent
	pre   *location.ClaimedSpot // the state read with the claim (nil: not read)
	owner string                // a live owner holds it: redirect there
	retry string                // not now (own lease not valid, the store disagreed)
	err   error                 // the store failed
}

// claim runs the claim of (kind, id) step by step (rule R3): read the
// record from the master, check the recorded owner's lease (tombstoning it
// when gone), compare-and-set; activate only if the answer arrives while
// this node's own lease is valid. Each step is one store call on one slot;
// a persistent kind's first step reads the persisted state's epoch with
// the record when the store keeps both (location.SpotClaimReader), and
// its compare-and-set takes the state with it (location.SpotStateClaimer),
// so a first call costs two round trips in all (the record with the
// epoch, the compare-and-set with the state). It runs on a store worker,
// never in an actor's turn.
func (rt *runtime) claim(kind, id string) claimResult {
	mesh, rid := rt.n.Mesh(), rt.n.RID()
	owner := fence.Unknown
	var persisted uint64
	var read *location.Ownership // the record, read with the state's epoch
	ks := rt.kinds[kind]
	persistent := ks != nil && ks.reg.persist != nil
	if persistent {
		// R3: the new epoch is above the persisted state's too, so epochs
		// never go back even when the record was lost. The epoch only, not
		// the data.
		ctx, cancel := rt.storeCtx()
		if rt.claimView != nil {
			rec, e, err := rt.claimView.SpotRecordAndStateEpoch(ctx, mesh, kind, id)
			cancel()
			if err != nil {
				return claimResult{err: err}
			}
			persisted, read = e, &rec
		} else {
			e, err := rt.states.SpotStateEpoch(ctx, mesh, kind, id)
			cancel()
			switch {
			case err == nil:
				persisted = e
			case !errors.Is(err, location.ErrNotFound):
				return claimResult{err: err}
			}
		}
	}
	for range 4 {
		gen, valid := rt.lease.holder(time.Now())
		if !valid || !published(rt.n) {
			return claimResult{retry: "the ownership lease of " + rid + " is not valid yet"}
		}
		self := fence.Holder{RID: rid, Gen: gen}
		var rec location.Ownership
		if read != nil {
			rec, read = *read, nil
		} else {
			ctx, cancel := rt.storeCtx()
			var err error
			rec, err = rt.dir.SpotRecord(ctx, mesh, kind, id)
			cancel()
			if err != nil {
				return claimResult{err: err}
			}
		}
		cur := fence.Record{Holder: fence.Holder{RID: rec.OwnerRID, Gen: rec.OwnerGeneration}, Epoch: rec.Epoch}
	plan:
		p := fence.PlanClaim(self, cur, owner, persisted)
		switch p.Step {
		case fence.Redirect:
			if p.Owner.RID == rid {
				// An earlier lease generation of this node still holds it
				// (its key lives until its TTL): wait, do not redirect.
				return claimResult{retry: "an earlier ownership lease of " + rid + " is still live"}
			}
			return claimResult{owner: p.Owner.RID}
		case fence.CheckOwner:
			ctx, cancel := rt.storeCtx()
			live, err := rt.dir.CheckSpotLease(ctx, location.SpotLease{Mesh: mesh, RID: p.Owner.RID, Generation: p.Owner.Gen}, rt.cfg.tombstoneTTL())
			cancel()
			if err != nil {
				return claimResult{err: err}
			}
			owner = fence.Gone
			if live {
				owner = fence.Live
			}
			goto plan
		case fence.Mine:
			// The record names this lease already (a release that failed, a
			// restarted kind actor). Claim it again with a new epoch rather
			// than trust a read: the write that made it ours may not have
			// been acknowledged (or replicated), and every activation gets
			// its own epoch.
			p = fence.Plan{Step: fence.CompareAndSet, Expect: cur, New: fence.Record{Holder: self, Epoch: max(cur.Epoch, persisted) + 1}}
			fallthrough
		case fence.CompareAndSet:
			expect := location.Ownership{Mesh: mesh, Kind: kind, ID: id, OwnerRID: p.Expect.Holder.RID,
				OwnerGeneration: p.Expect.Holder.Gen, Epoch: p.Expect.Epoch}
			next := location.Ownership{Mesh: mesh, Kind: kind, ID: id, OwnerRID: rid, OwnerGeneration: gen, Epoch: p.New.Epoch}
			ctx, cancel := rt.storeCtx()
			sent := time.Now()
			inc, pre, err := rt.claimCAS(ctx, persistent, expect, next)
			cancel()
			switch {
			case err == nil:
				if rt.lease.valid(gen, time.Now()) {
					return claimResult{ok: true, epoch: next.Epoch, gen: gen, inc: inc, sent: sent, pre: pre}
				}
				return claimResult{retry: "lease lapsed during the claim"}
			case errors.Is(err, location.ErrFenced):
				owner = fence.Unknown // somebody else wrote first: read again
				continue
			default:
				return claimResult{err: err}
			}
		}
	}
	return claimResult{retry: fmt.Sprintf("spot %s/%s: contended claim", kind, id)}
}

// claimCAS is the claim's compare-and-set. For a persistent kind on a store
// that keeps the states beside the records it also takes the state (pre),
// so the activation reads nothing more: a first call costs the record
// with the state's epoch, then this.
func (rt *runtime) claimCAS(ctx context.Context, persistent bool, expect, next location.Ownership) (string, *location.ClaimedSpot, error) {
	if persistent && rt.stateClaim != nil {
		c, err := rt.stateClaim.ClaimSpotWithState(ctx, expect, next)
		if err != nil {
			return "", nil, err
		}
		return c.Incarnation, &c, nil
	}
	_, inc, err := rt.dir.ClaimSpotIn(ctx, expect, next)
	return inc, nil, err
}

// release gives up the record of an activation (rule R4: it compares
// owner, generation and epoch). A record that changed under a live
// activation is evidence of a lost store write: counted and logged.
func (rt *runtime) release(kind string, act *activation) {
	ctx, cancel := rt.storeCtx()
	defer cancel()
	o := location.Ownership{Mesh: rt.n.Mesh(), Kind: kind, ID: act.id, OwnerRID: rt.n.RID(), OwnerGeneration: act.gen, Epoch: act.epoch}
	err := rt.dir.ReleaseSpot(ctx, o)
	switch {
	case err == nil:
	case errors.Is(err, location.ErrFenced):
		rt.stats.overlaps.Add(1)
		rt.log.Error().Str("kind", kind).Str("id", act.id).Uint64("epoch", act.epoch).
			Msg("spots: the ownership record changed under a live activation (a lost store write); possible overlap")
	default:
		rt.log.Warn().Err(err).Str("kind", kind).Str("id", act.id).Msg("spots: release failed; the record is claimable once the lease expires")
	}
}
