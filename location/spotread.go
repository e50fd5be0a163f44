package location

import (
	"context"
	"fmt"
)

// The read-only look at a Spot lease (SpotDirectory.SpotLeaseLive): what
// an operator's "who owns this Spot?" needs beside SpotRecord, without
// the tombstone CheckSpotLease writes.

// SpotLeaseLive implements SpotDirectory.
func (m *Memory) SpotLeaseLive(ctx context.Context, l SpotLease) (bool, error) {
	if err := l.validate(); err != nil {
		return false, err
	}
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	return m.leases.live(l, m.now()), nil
}

// SpotLeaseLive implements SpotDirectory. It reads from the master.
func (r *Redis) SpotLeaseLive(ctx context.Context, l SpotLease) (bool, error) {
	if err := l.validate(); err != nil {
		return false, err
	}
	if err := r.check(); err != nil {
		return false, err
	}
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
