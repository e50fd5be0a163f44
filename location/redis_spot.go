package location

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// createSpotLease is SpotDirectory.CreateSpotLease behind validated.
func (r *Redis) createSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	st, err := r.leaseOp(ctx, "create spot lease", spotLeaseCreateScript, l, ttl, "ok")
	switch {
	case err != nil:
		return err
	case st == "ok":
		return nil
	case st == "exists":
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrExists, l.Mesh, l.RID, l.Generation)
	case st == "fenced":
		return leaseTombstoned(l)
	}
	return fmt.Errorf("zlink: redis create spot lease: reply %.32q", st)
}

// renewSpotLease is SpotDirectory.RenewSpotLease behind validated.
func (r *Redis) renewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	st, err := r.leaseOp(ctx, "renew spot lease", spotLeaseRenewScript, l, ttl, "ok")
	switch {
	case err != nil:
		return err
	case st == "ok":
		return nil
	case st == "gone":
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrNotFound, l.Mesh, l.RID, l.Generation)
	case st == "fenced":
		return leaseTombstoned(l)
	}
	return fmt.Errorf("zlink: redis renew spot lease: reply %.32q", st)
}

// deleteSpotLease is SpotDirectory.DeleteSpotLease behind validated.
func (r *Redis) deleteSpotLease(ctx context.Context, l SpotLease) error {
	st, err := r.leaseOp(ctx, "delete spot lease", spotLeaseDeleteScript, l, 0, "ok")
	switch {
	case err != nil:
		return err
	case st == "ok":
		return nil
	case st == "gone":
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrNotFound, l.Mesh, l.RID, l.Generation)
	}
	return fmt.Errorf("zlink: redis delete spot lease: reply %.32q", st)
}

// checkSpotLease is SpotDirectory.CheckSpotLease behind validated.
func (r *Redis) checkSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error) {
	st, err := r.leaseOp(ctx, "check spot lease", spotLeaseCheckScript, l, tombTTL, "gone")
	switch {
	case err != nil:
		return false, err
	case st == "live":
		return true, nil
	case st == "gone":
		return false, nil
	}
	return false, fmt.Errorf("zlink: redis check spot lease: reply %.32q", st)
}

// leaseOp runs a lease script on (lease, tombstone) with ttl as its
// argument and returns its status reply. When the status is wrote, the
// script wrote and its confirmation applies: err then matches
// ErrUnconfirmed if no replica confirmed it.
func (r *Redis) leaseOp(ctx context.Context, what string, s *luaScript, l SpotLease, ttl time.Duration, wrote string) (string, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	lease, tomb := r.spotLeaseKeys(l)
	res, confirm := r.spotExec(ctx, s, []string{lease, tomb}, []string{ttlMillis(ttl)})
	st, err := res.ToString()
	if err != nil {
		return "", r.wrap(what, err)
	}
	if st == wrote && confirm != nil {
		return st, r.unconfirmed(fmt.Sprintf("%s %s/%.64s generation %d", what, l.Mesh, l.RID, l.Generation), confirm)
	}
	return st, nil
}

func leaseTombstoned(l SpotLease) error {
	return fmt.Errorf("%w: spot lease %s/%s generation %d is tombstoned", ErrFenced, l.Mesh, l.RID, l.Generation)
}

// spotRecord is SpotDirectory.SpotRecord behind validated. It reads from
// the master.
func (r *Redis) spotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	reply, err := spotRecordScript.Exec(ctx, r.client, []string{r.spotKey(mesh, kind, id)}, nil).AsStrSlice()
	if err != nil {
		return Ownership{}, r.wrap("read spot record", err)
	}
	_, cur, err := r.spotReply(spot, reply)
	return cur, err
}

// claimSpot is SpotDirectory.ClaimSpot behind validated.
func (r *Redis) claimSpot(ctx context.Context, expect, next Ownership) (Ownership, error) {
	cur, _, err := r.claim(ctx, expect, next, false)
	return cur, err
}

// claimSpotIn is SpotDirectory.ClaimSpotIn behind validated.
func (r *Redis) claimSpotIn(ctx context.Context, expect, next Ownership) (Ownership, string, error) {
	return r.claim(ctx, expect, next, true)
}

func (r *Redis) claim(ctx context.Context, expect, next Ownership, withInc bool) (Ownership, string, error) {
	st, cur, inc, err := r.spotCASInc(ctx, "claim spot", expect, next, withInc)
	switch {
	case err != nil:
		return Ownership{}, "", err
	case st == "done":
		return cur, inc, nil
	case st == "fenced":
		return cur, inc, fenced(cur, expect)
	}
	return Ownership{}, "", fmt.Errorf("zlink: redis claim spot: reply %.32q", st)
}

// spotIncarnation is SpotDirectory.SpotIncarnation behind validated: the
// run_id of the master that serves the Spot's slot.
func (r *Redis) spotIncarnation(ctx context.Context, mesh, kind, id string) (string, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	inc, err := spotIncarnationScript.Exec(ctx, r.client, []string{r.spotKey(mesh, kind, id)}, nil).ToString()
	if err != nil {
		return "", r.wrap("spot incarnation", err)
	}
	if inc == "" {
		return "", fmt.Errorf("zlink: redis spot incarnation: the server reports no run_id")
	}
	return inc, nil
}

// releaseSpot is SpotDirectory.ReleaseSpot behind validated.
func (r *Redis) releaseSpot(ctx context.Context, o Ownership) error {
	released := Ownership{Kind: o.Kind, ID: o.ID, Mesh: o.Mesh, Epoch: o.Epoch}
	st, cur, err := r.spotCAS(ctx, "release spot", o, released)
	switch {
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("%w: %w", ErrFenced, err)
	case err != nil:
		return err
	case st == "done":
		return nil
	case st == "fenced":
		return fenced(cur, o)
	}
	return fmt.Errorf("zlink: redis release spot: reply %.32q", st)
}

// transferSpot is SpotDirectory.TransferSpot behind validated.
func (r *Redis) transferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error) {
	next := from
	next.OwnerRID, next.OwnerGeneration, next.Epoch = toRID, toGen, from.Epoch+1
	st, cur, err := r.spotCAS(ctx, "transfer spot", from, next)
	switch {
	case errors.Is(err, ErrCorrupt):
		return Ownership{}, fmt.Errorf("%w: %w", ErrFenced, err)
	case err != nil:
		return Ownership{}, err
	case st == "done":
		return cur, nil
	case st == "fenced":
		return cur, fenced(cur, from)
	}
	return Ownership{}, fmt.Errorf("zlink: redis transfer spot: reply %.32q", st)
}

// spotCAS runs the compare-and-set script from expect to next (same Spot)
// and returns its status ("done" or "fenced") with the written or current
// record. A corrupt record is reported and returned as ErrCorrupt; a write
// no replica confirmed as ErrUnconfirmed.
func (r *Redis) spotCAS(ctx context.Context, what string, expect, next Ownership) (string, Ownership, error) {
	st, cur, _, err := r.spotCASInc(ctx, what, expect, next, false)
	return st, cur, err
}

// spotCASInc is spotCAS; withInc also returns the run_id of the master
// that ran the script.
func (r *Redis) spotCASInc(ctx context.Context, what string, expect, next Ownership, withInc bool) (string, Ownership, string, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	script := spotCASScript
	if withInc {
		script = spotCASIncScript
	}
	res, confirm := r.spotExec(ctx, script, []string{r.spotKey(next.Mesh, next.Kind, next.ID)}, casArgs(expect, next))
	reply, err := res.AsStrSlice()
	if err != nil {
		return "", Ownership{}, "", r.wrap(what, err)
	}
	inc := ""
	if withInc && len(reply) == 5 {
		inc, reply = reply[4], reply[:4]
	}
	st, cur, err := r.spotReply(next, reply)
	if err != nil {
		return "", Ownership{}, "", err
	}
	if st == "done" && confirm != nil {
		return "", Ownership{}, "", r.unconfirmed(fmt.Sprintf("%s %s/%s in mesh %q (%s)", what, next.Kind, next.ID, next.Mesh, holderString(next)), confirm)
	}
	return st, cur, inc, nil
}

// casArgs are the compare-and-set scripts' ARGV 1-6: the expected record,
// then the one to write (room for one more argument).
func casArgs(expect, next Ownership) []string {
	return append(make([]string, 0, 7),
		expect.OwnerRID, genField(expect.OwnerGeneration), u64(expect.Epoch),
		next.OwnerRID, genField(next.OwnerGeneration), u64(next.Epoch))
}

// genField is the stored form of an owner generation: "" for no owner.
func genField(gen uint64) string {
	if gen == 0 {
		return ""
	}
	return u64(gen)
}

// spotReply parses a {status, owner, gen, epoch} reply of the Spot record
// scripts. A record the script or parseSpotRecord finds corrupt is
// reported and returned as ErrCorrupt.
func (r *Redis) spotReply(spot Ownership, reply []string) (string, Ownership, error) {
	if len(reply) != 4 {
		return "", Ownership{}, fmt.Errorf("zlink: redis spot record script: reply of %d fields", len(reply))
	}
	cur, err := parseSpotRecord(spot, reply[1:])
	if err == nil && reply[0] == "corrupt" {
		err = corruptf("spot record %s/%s: owner %.64q generation %.24q epoch %.24q", spot.Kind, spot.ID, reply[1], reply[2], reply[3])
	}
	if err != nil {
		r.corrupt.report(r.cfg.Logger, r.spotKey(spot.Mesh, spot.Kind, spot.ID), err)
		return "", Ownership{}, err
	}
	return reply[0], cur, nil
}

// spotLeaseLive is SpotDirectory.SpotLeaseLive behind validated. It reads
// from the master.
func (r *Redis) spotLeaseLive(ctx context.Context, l SpotLease) (bool, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	lease, _ := r.spotLeaseKeys(l)
	n, err := r.client.Do(ctx, r.client.B().Exists().Key(lease).Build()).AsInt64()
	if err != nil {
		return false, r.wrap("read spot lease", err)
	}
	switch n {
	case 0, 1:
		return n == 1, nil
	}
	return false, fmt.Errorf("zlink: redis read spot lease: reply %d", n)
}
