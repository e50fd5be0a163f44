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
	// ErrNotFound if there is none.
	GetSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error)
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

// PutSpotState implements SpotStates.
func (m *Memory) PutSpotState(ctx context.Context, o Ownership, st SpotState) error {
	if err := validState(o, st); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if cur := m.recordLocked(o); cur != o {
		return fenced(cur, o)
	}
	if m.states == nil {
		m.states = map[spotKey]SpotState{}
	}
	st.Data = append([]byte(nil), st.Data...)
	m.states[spotKey{o.Mesh, o.Kind, o.ID}] = st
	return nil
}

// GetSpotState implements SpotStates.
func (m *Memory) GetSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	if err := spot.validateSpot(); err != nil {
		return SpotState{}, err
	}
	if err := m.lock(ctx); err != nil {
		return SpotState{}, err
	}
	defer m.mu.Unlock()
	st, ok := m.states[spotKey{mesh, kind, id}]
	if !ok {
		return SpotState{}, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	st.Data = append([]byte(nil), st.Data...)
	return st, nil
}

// spotStateKey is the state's key: the record's hash tag, so one script
// compares the record and writes the state.
func (r *Redis) spotStateKey(mesh, kind, id string) string {
	return r.spotKey(mesh, kind, id) + ":state"
}

// PutSpotState implements SpotStates.
func (r *Redis) PutSpotState(ctx context.Context, o Ownership, st SpotState) error {
	if err := validState(o, st); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
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

// GetSpotState implements SpotStates.
func (r *Redis) GetSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	if err := spot.validateSpot(); err != nil {
		return SpotState{}, err
	}
	if err := r.check(); err != nil {
		return SpotState{}, err
	}
	ctx, cancel := r.opCtx(ctx)
	defer cancel()
	vals, err := r.client.Do(ctx, r.client.B().Hmget().Key(r.spotStateKey(mesh, kind, id)).Field("v", "epoch", "d").Build()).ToArray()
	if err != nil {
		return SpotState{}, r.wrap("get spot state", err)
	}
	if len(vals) != 3 || vals[2].IsNil() {
		return SpotState{}, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	vs, _ := vals[0].ToString()
	es, _ := vals[1].ToString()
	d, _ := vals[2].ToString()
	v, err1 := strconv.ParseUint(vs, 10, 32)
	e, err2 := strconv.ParseUint(es, 10, 64)
	if err1 != nil || err2 != nil || e == 0 || len(d) > MaxSpotState {
		err := corruptf("state of spot %s/%s: version %.16q epoch %.24q, %d bytes", kind, id, vs, es, len(d))
		r.corrupt.report(r.cfg.Logger, r.spotStateKey(mesh, kind, id), err)
		return SpotState{}, err
	}
	return SpotState{Data: []byte(d), Version: uint32(v), Epoch: e}, nil
}
