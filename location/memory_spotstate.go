package location

// The in-memory store's persisted Spot state, beside the ownership records.

import (
	"context"
	"fmt"
)

// putSpotState is SpotStates.PutSpotState behind validated.
func (m *Memory) putSpotState(ctx context.Context, o Ownership, st SpotState) error {
	m.mu.Lock()
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

// getSpotState is SpotStates.GetSpotState behind validated.
func (m *Memory) getSpotState(ctx context.Context, mesh, kind, id string) (SpotState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[spotKey{mesh, kind, id}]
	if !ok {
		return SpotState{}, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	st.Data = append([]byte(nil), st.Data...)
	return st, nil
}

// spotStateEpoch is SpotStates.SpotStateEpoch behind validated.
func (m *Memory) spotStateEpoch(ctx context.Context, mesh, kind, id string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[spotKey{mesh, kind, id}]
	if !ok {
		return 0, fmt.Errorf("%w: state of spot %s/%s in mesh %q", ErrNotFound, kind, id, mesh)
	}
	return st.Epoch, nil
}

// spotRecordAndStateEpoch is SpotClaimReader.SpotRecordAndStateEpoch behind
// validated.
func (m *Memory) spotRecordAndStateEpoch(ctx context.Context, mesh, kind, id string) (Ownership, uint64, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recordLocked(spot), m.states[spotKey{mesh, kind, id}].Epoch, nil
}

// claimSpotWithState is SpotStateClaimer.ClaimSpotWithState behind
// validated: the claim and the state read under one hold of the lock.
func (m *Memory) claimSpotWithState(ctx context.Context, expect, next Ownership) (ClaimedSpot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.recordLocked(next); cur != expect {
		return ClaimedSpot{Record: cur, Incarnation: m.inc}, fenced(cur, expect)
	}
	k := spotKey{next.Mesh, next.Kind, next.ID}
	m.spots[k] = next
	c := ClaimedSpot{Record: next, Incarnation: m.inc}
	if st, ok := m.states[k]; ok {
		st.Data = append([]byte(nil), st.Data...)
		c.Found, c.State = true, st
	}
	return c, nil
}
