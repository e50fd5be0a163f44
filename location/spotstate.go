package location

import (
	"context"
	"fmt"
	"strconv"
)

// SpotState is a Spot's persisted state: an opaque snapshot written by the
// activation that owns the Spot. It lives under the Spot's own hash tag,
// beside its ownership record, so a write can compare the record in the
// same atomic step.
type SpotState struct {
	// Data is the snapshot (the Spot kind's encoding). At most
	// MaxSpotState bytes.
	Data []byte
	// Version is the kind's snapshot format version (a new build reads an
	// old snapshot, or refuses it clearly).
	Version uint32
	// Epoch is the ownership epoch of the activation that wrote it; a
	// claim takes a new epoch above it (R3), so epochs never go back even
	// when the record is lost.
	Epoch uint64
}

// MaxSpotState bounds a Spot's snapshot.
const MaxSpotState = 16 << 20

// SpotStates is the persistence of Spot state in a Store.
type SpotStates interface {
	// PutSpotState writes st only if the Spot's ownership record still
	// equals o — owner RID, generation and epoch — so a stale owner can
	// never write, not even before the new owner's first write; else
	// ErrFenced. st.Epoch must equal o.Epoch. On Redis shards with
	// replicas the write counts once a replica confirmed it
	// (ErrUnconfirmed otherwise).
	PutSpotState(ctx context.Context, o Ownership, st SpotState) error
	// GetSpotState reads the Spot's persisted state from the master;
	// ErrNotFound if there is none. A stored value larger than
	// MaxSpotState is ErrCorrupt, refused before it is read.
	GetSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error)
	// SpotStateEpoch reads only the Epoch of the Spot's persisted state
	// (what a claim needs), not its data; ErrNotFound if there is none.
	SpotStateEpoch(ctx context.Context, mesh, kind, id string) (uint64, error)
}

// SpotClaimReader is implemented by a store that keeps Spot states beside
// their ownership records (Memory, Redis: under the record's hash tag): a
// claim of a persistent Spot reads both in one step.
type SpotClaimReader interface {
	// SpotRecordAndStateEpoch reads the Spot's ownership record (as
	// SpotDirectory.SpotRecord) and the Epoch of its persisted state (as
	// SpotStates.SpotStateEpoch, 0 when there is none) in one round trip.
	SpotRecordAndStateEpoch(ctx context.Context, mesh, kind, id string) (Ownership, uint64, error)
}

// SpotStateClaimer is implemented by a store that keeps Spot states beside
// their ownership records (Memory, Redis: under the record's hash tag): a
// claim of a persistent Spot takes the state with its compare-and-set, so
// the activation needs no read of its own.
type SpotStateClaimer interface {
	// ClaimSpotWithState is SpotDirectory.ClaimSpotIn that, when the
	// write is done, also reads the Spot's persisted state as it is after
	// the write — from then on only the new owner can change it, so this
	// is the state a GetSpotState right after the claim would return. On
	// ErrFenced the result's Record is the current record and no state is
	// read.
	ClaimSpotWithState(ctx context.Context, expect, next Ownership) (ClaimedSpot, error)
}

// ClaimedSpot is the result of SpotStateClaimer.ClaimSpotWithState.
type ClaimedSpot struct {
	Record      Ownership // the record written (with ErrFenced: the current one)
	Incarnation string    // as ClaimSpotIn returns it
	// Found says a state exists: State holds it. Without one (and without
	// StateErr) the Spot has none yet.
	Found bool
	State SpotState
	// StateErr is set when a state exists but was not taken: ErrCorrupt
	// (not a hash, a bad field, or larger than MaxSpotState; reported as
	// GetSpotState reports it). The claim stands either way.
	StateErr error
}

func validState(o Ownership, st SpotState) error {
	if err := o.validateOwner(); err != nil {
		return err
	}
	if st.Epoch != o.Epoch {
		return invalidf("spot state of %s/%s: epoch %d written by the owner at epoch %d", o.Kind, o.ID, st.Epoch, o.Epoch)
	}
	if len(st.Data) > MaxSpotState {
		return invalidf("spot state of %s/%s: %d bytes, more than %d", o.Kind, o.ID, len(st.Data), MaxSpotState)
	}
	return nil
}

// spotStateKey is the state's key: the record's hash tag, so one script
// compares the record and writes the state.
func (r *Redis) spotStateKey(mesh, kind, id string) string {
	return r.spotKey(mesh, kind, id) + ":state"
}

// putSpotState is SpotStates.PutSpotState behind validated.
func (r *Redis) putSpotState(ctx context.Context, o Ownership, st SpotState) error {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	res, confirm := r.spotExec(ctx, spotStatePutScript,
		[]string{r.spotKey(o.Mesh, o.Kind, o.ID), r.spotStateKey(o.Mesh, o.Kind, o.ID)},
		[]string{o.OwnerRID, genField(o.OwnerGeneration), u64(o.Epoch), strconv.FormatUint(uint64(st.Version), 10), string(st.Data)})
	reply, err := res.AsStrSlice()
	if err != nil {
		return r.wrap("put spot state", err)
	}
	stt, cur, err := r.spotReply(o, reply)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrFenced, err)
	case stt == "fenced":
		return fenced(cur, o)
	case stt == "done" && confirm != nil:
		return r.unconfirmed(fmt.Sprintf("put spot state %s/%s in mesh %q", o.Kind, o.ID, o.Mesh), confirm)
	case stt == "done":
		return nil
	}
	return fmt.Errorf("zlink: redis put spot state: reply %.32q", stt)
}

// getSpotState is SpotStates.GetSpotState behind validated. The data's size
// is checked inside Redis before the data is read (spotStateGetScript).
func (r *Redis) getSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key := r.spotStateKey(mesh, kind, id)
	f, err := spotStateGetScript.Exec(ctx, r.client, []string{key}, []string{maxSpotStateArg}).AsStrSlice()
	if err != nil {
		return SpotState{}, r.wrap("get spot state", err)
	}
	if len(f) == 0 {
		return SpotState{}, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	st, err := parseSpotState(f)
	if err != nil {
		err = corruptf("state of spot %s/%s: %w", kind, id, err)
		r.corrupt.report(r.cfg.Logger, key, err)
		return SpotState{}, err
	}
	return st, nil
}

// spotStateEpoch is SpotStates.SpotStateEpoch behind validated.
func (r *Redis) spotStateEpoch(ctx context.Context, mesh, kind, id string) (uint64, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key := r.spotStateKey(mesh, kind, id)
	f, err := spotStateEpochScript.Exec(ctx, r.client, []string{key}, nil).AsStrSlice()
	if err != nil {
		return 0, r.wrap("get spot state epoch", err)
	}
	if len(f) == 0 {
		return 0, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	var e uint64
	if len(f) == 2 && f[0] == "ok" {
		e, err = parseEpoch(f[1])
	} else {
		err = fmt.Errorf("not a hash (reply of %d fields)", len(f))
	}
	if err != nil {
		err = corruptf("state of spot %s/%s: %w", kind, id, err)
		r.corrupt.report(r.cfg.Logger, key, err)
		return 0, err
	}
	return e, nil
}

// spotRecordAndStateEpoch is SpotClaimReader.SpotRecordAndStateEpoch behind
// validated: one read-only script on the Spot's hash tag
// (spotClaimViewScript).
func (r *Redis) spotRecordAndStateEpoch(ctx context.Context, mesh, kind, id string) (Ownership, uint64, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	key := r.spotStateKey(mesh, kind, id)
	reply, err := spotClaimViewScript.Exec(ctx, r.client, []string{r.spotKey(mesh, kind, id), key}, nil).AsStrSlice()
	if err != nil {
		return Ownership{}, 0, r.wrap("read spot record and state epoch", err)
	}
	if len(reply) != 6 {
		return Ownership{}, 0, fmt.Errorf("zlink: redis spot claim view script: reply of %d fields", len(reply))
	}
	_, cur, err := r.spotReply(spot, reply[:4])
	if err != nil {
		return Ownership{}, 0, err
	}
	var e uint64
	switch reply[4] {
	case "none":
		return cur, 0, nil
	case "ok":
		e, err = parseEpoch(reply[5])
	default:
		err = fmt.Errorf("not a hash (reply %.16q)", reply[4])
	}
	if err != nil {
		err = corruptf("state of spot %s/%s: %w", kind, id, err)
		r.corrupt.report(r.cfg.Logger, key, err)
		return Ownership{}, 0, err
	}
	return cur, e, nil
}

// claimSpotWithState is SpotStateClaimer.ClaimSpotWithState behind
// validated: one script on the Spot's hash tag (spotClaimStateScript).
func (r *Redis) claimSpotWithState(ctx context.Context, expect, next Ownership) (ClaimedSpot, error) {
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	stKey := r.spotStateKey(next.Mesh, next.Kind, next.ID)
	res, confirm := r.spotExec(ctx, spotClaimStateScript, []string{r.spotKey(next.Mesh, next.Kind, next.ID), stKey},
		append(casArgs(expect, next), maxSpotStateArg))
	reply, err := res.AsStrSlice()
	if err != nil {
		return ClaimedSpot{}, r.wrap("claim spot", err)
	}
	if len(reply) < 5 {
		return ClaimedSpot{}, fmt.Errorf("zlink: redis claim spot: reply of %d fields", len(reply))
	}
	st, cur, err := r.spotReply(next, reply[:4])
	if err != nil {
		return ClaimedSpot{}, err
	}
	c := ClaimedSpot{Record: cur, Incarnation: reply[4]}
	switch {
	case st == "fenced":
		return c, fenced(cur, expect)
	case st != "done":
		return ClaimedSpot{}, fmt.Errorf("zlink: redis claim spot: reply %.32q", st)
	case confirm != nil:
		return ClaimedSpot{}, r.unconfirmed(fmt.Sprintf("claim spot %s/%s in mesh %q (%s)", next.Kind, next.ID, next.Mesh, holderString(next)), confirm)
	case len(reply) == 6 && reply[5] == "none":
		return c, nil
	}
	c.State, c.StateErr = parseSpotState(reply[5:])
	if c.StateErr != nil {
		c.StateErr = corruptf("state of spot %s/%s: %w", next.Kind, next.ID, c.StateErr)
		r.corrupt.report(r.cfg.Logger, stKey, c.StateErr)
		c.State = SpotState{}
		return c, nil
	}
	c.Found = true
	return c, nil
}

// maxSpotStateArg is MaxSpotState as a script argument.
var maxSpotStateArg = strconv.Itoa(MaxSpotState)

// parseSpotState decodes spotStateGetScript's reply for an existing state.
func parseSpotState(f []string) (SpotState, error) {
	switch {
	case len(f) == 4 && f[0] == "big":
		return SpotState{}, fmt.Errorf("%s bytes, more than %d (not read)", f[3], MaxSpotState)
	case len(f) != 4 || f[0] != "ok":
		return SpotState{}, fmt.Errorf("not a hash (reply of %d fields)", len(f))
	}
	v, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		return SpotState{}, fmt.Errorf("version %.16q", f[1])
	}
	e, err := parseEpoch(f[2])
	if err != nil {
		return SpotState{}, err
	}
	if len(f[3]) > MaxSpotState { // the script checked it; a reply never exceeds it
		return SpotState{}, fmt.Errorf("%d bytes, more than %d", len(f[3]), MaxSpotState)
	}
	return SpotState{Data: []byte(f[3]), Version: uint32(v), Epoch: e}, nil
}

// parseEpoch decodes a state's epoch: a positive decimal.
func parseEpoch(s string) (uint64, error) {
	e, err := strconv.ParseUint(s, 10, 64)
	if err != nil || e == 0 {
		return 0, fmt.Errorf("epoch %.24q", s)
	}
	return e, nil
}
