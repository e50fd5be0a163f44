package location

import (
	"context"
	"fmt"
	"time"
)

// expiring is a set of keys with deadlines (Spot leases, tombstones). An
// entry is live while the clock is before its deadline; expired entries
// are dropped when looked up and by a sweep whenever the set has doubled
// since the last one, so the set stays bounded by the live entries.
type expiring[K comparable] struct {
	m         map[K]time.Time
	lastSweep int
}

func newExpiring[K comparable]() expiring[K] { return expiring[K]{m: make(map[K]time.Time)} }

func (e *expiring[K]) live(k K, now time.Time) bool {
	d, ok := e.m[k]
	if ok && !now.Before(d) {
		delete(e.m, k)
		return false
	}
	return ok
}

func (e *expiring[K]) deadline(k K, now time.Time) (time.Time, bool) {
	if !e.live(k, now) {
		return time.Time{}, false
	}
	return e.m[k], true
}

func (e *expiring[K]) set(k K, d, now time.Time) {
	e.m[k] = d
	if len(e.m) > 2*max(e.lastSweep, 512) {
		for k, d := range e.m {
			if !now.Before(d) {
				delete(e.m, k)
			}
		}
		e.lastSweep = len(e.m)
	}
}

// createSpotLease is SpotDirectory.CreateSpotLease behind validated.
func (m *Memory) createSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	switch {
	case m.tombs.live(l, now):
		return fmt.Errorf("%w: spot lease %s/%s generation %d is tombstoned", ErrFenced, l.Mesh, l.RID, l.Generation)
	case m.leases.live(l, now):
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrExists, l.Mesh, l.RID, l.Generation)
	}
	m.leases.set(l, now.Add(ttl), now)
	return nil
}

// renewSpotLease is SpotDirectory.RenewSpotLease behind validated.
func (m *Memory) renewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	switch {
	case m.tombs.live(l, now):
		return fmt.Errorf("%w: spot lease %s/%s generation %d is tombstoned", ErrFenced, l.Mesh, l.RID, l.Generation)
	case !m.leases.live(l, now):
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrNotFound, l.Mesh, l.RID, l.Generation)
	}
	m.leases.set(l, now.Add(ttl), now)
	return nil
}

// deleteSpotLease is SpotDirectory.DeleteSpotLease behind validated.
func (m *Memory) deleteSpotLease(ctx context.Context, l SpotLease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.leases.live(l, m.now()) {
		return fmt.Errorf("%w: spot lease %s/%s generation %d", ErrNotFound, l.Mesh, l.RID, l.Generation)
	}
	delete(m.leases.m, l)
	return nil
}

// checkSpotLease is SpotDirectory.CheckSpotLease behind validated.
func (m *Memory) checkSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.leases.live(l, now) {
		return true, nil
	}
	if d, ok := m.tombs.deadline(l, now); !ok || d.Before(now.Add(tombTTL)) {
		m.tombs.set(l, now.Add(tombTTL), now)
	}
	return false, nil
}

// recordLocked returns the stored record of the Spot named by o (zero
// owner and epoch when absent).
func (m *Memory) recordLocked(o Ownership) Ownership {
	if cur, ok := m.spots[spotKey{o.Mesh, o.Kind, o.ID}]; ok {
		return cur
	}
	return Ownership{Kind: o.Kind, ID: o.ID, Mesh: o.Mesh}
}

// spotRecord is SpotDirectory.SpotRecord behind validated.
func (m *Memory) spotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error) {
	spot := Ownership{Mesh: mesh, Kind: kind, ID: id}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recordLocked(spot), nil
}

// claimSpot is SpotDirectory.ClaimSpot behind validated.
func (m *Memory) claimSpot(ctx context.Context, expect, next Ownership) (Ownership, error) {
	cur, _, err := m.claimSpotIn(ctx, expect, next)
	return cur, err
}

// claimSpotIn is SpotDirectory.ClaimSpotIn behind validated.
func (m *Memory) claimSpotIn(ctx context.Context, expect, next Ownership) (Ownership, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.recordLocked(next); cur != expect {
		return cur, m.inc, fenced(cur, expect)
	}
	m.spots[spotKey{next.Mesh, next.Kind, next.ID}] = next
	return next, m.inc, nil
}

// spotIncarnation is SpotDirectory.SpotIncarnation behind validated: the
// store's incarnation, which RestartEmpty changes.
func (m *Memory) spotIncarnation(ctx context.Context, mesh, kind, id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inc, nil
}

// RestartEmpty is what an empty restart of a real store does to the Spot
// directory: every ownership record, lease and tombstone is gone and the
// incarnation changes. Descriptors and publishers are kept (their owners
// rewrite them within a TTL anyway). For fault tests and demos.
func (m *Memory) RestartEmpty() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spots = make(map[spotKey]Ownership)
	m.states = nil
	m.rems = memReminders{}
	m.leases = newExpiring[SpotLease]()
	m.tombs = newExpiring[SpotLease]()
	m.incN++
	m.inc = fmt.Sprintf("memory-%d", m.incN)
}

// releaseSpot is SpotDirectory.ReleaseSpot behind validated.
func (m *Memory) releaseSpot(ctx context.Context, o Ownership) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.recordLocked(o); cur != o {
		return fenced(cur, o)
	}
	m.spots[spotKey{o.Mesh, o.Kind, o.ID}] = Ownership{Kind: o.Kind, ID: o.ID, Mesh: o.Mesh, Epoch: o.Epoch}
	return nil
}

// transferSpot is SpotDirectory.TransferSpot behind validated.
func (m *Memory) transferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.recordLocked(from); cur != from {
		return cur, fenced(cur, from)
	}
	next := from
	next.OwnerRID, next.OwnerGeneration, next.Epoch = toRID, toGen, from.Epoch+1
	m.spots[spotKey{from.Mesh, from.Kind, from.ID}] = next
	return next, nil
}

// fenced is the ErrFenced of a compare-and-set that expected `expected`
// and found cur.
func fenced(cur, expected Ownership) error {
	return fmt.Errorf("%w: spot %s/%s in mesh %q is %s, expected %s", ErrFenced,
		cur.Kind, cur.ID, cur.Mesh, holderString(cur), holderString(expected))
}

func holderString(o Ownership) string {
	if o.OwnerRID == "" {
		return fmt.Sprintf("unowned at epoch %d", o.Epoch)
	}
	return fmt.Sprintf("%.64s generation %d epoch %d", o.OwnerRID, o.OwnerGeneration, o.Epoch)
}

// spotLeaseLive is SpotDirectory.SpotLeaseLive behind validated.
func (m *Memory) spotLeaseLive(ctx context.Context, l SpotLease) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leases.live(l, m.now()), nil
}
