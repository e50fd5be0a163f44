package locationtest

import (
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// Spot lease conformance: created once (NX), renewed only while it exists
// (XX), refused for good once a check found it gone and tombstoned it.

func lease(mesh, rid string, gen uint64) location.SpotLease {
	return location.SpotLease{Mesh: mesh, RID: rid, Generation: gen}
}

func requireLive(t *testing.T, s location.Store, l location.SpotLease, tombTTL time.Duration, want bool) {
	t.Helper()
	live, err := s.CheckSpotLease(testCtx(t), l, tombTTL)
	requireNoErr(t, err)
	if live != want {
		t.Fatalf("check of lease %+v: live %v, want %v", l, live, want)
	}
}

func testSpotLeaseCreateRenewDelete(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	l := lease("m", "n", 1<<63+5) // generation beyond float64 precision
	// A renewal never creates the lease.
	requireIs(t, s.RenewSpotLease(ctx, l, LongTTL), location.ErrNotFound)
	requireNoErr(t, s.CreateSpotLease(ctx, l, LongTTL))
	requireIs(t, s.CreateSpotLease(ctx, l, LongTTL), location.ErrExists)
	requireLive(t, s, l, LongTTL, true)
	requireNoErr(t, s.RenewSpotLease(ctx, l, LongTTL))

	// Every (mesh, RID, generation) is its own lease.
	next := lease("m", "n", 1<<63+6)
	requireNoErr(t, s.CreateSpotLease(ctx, next, LongTTL))
	requireNoErr(t, s.CreateSpotLease(ctx, lease("m", "other", 1<<63+5), LongTTL))

	requireNoErr(t, s.DeleteSpotLease(ctx, l))
	requireIs(t, s.DeleteSpotLease(ctx, l), location.ErrNotFound)
	requireIs(t, s.RenewSpotLease(ctx, l, LongTTL), location.ErrNotFound)
	requireLive(t, s, next, LongTTL, true)

	// A renewal extends the lease; an expired lease is not renewed.
	renewed, lapsed, probe := lease("m", "r", 1), lease("m", "r", 2), lease("m", "r", 3)
	requireNoErr(t, s.CreateSpotLease(ctx, renewed, ShortTTL))
	requireNoErr(t, s.CreateSpotLease(ctx, lapsed, ShortTTL))
	requireNoErr(t, s.CreateSpotLease(ctx, probe, ShortTTL))
	requireNoErr(t, s.RenewSpotLease(ctx, renewed, LongTTL))
	expire(ShortTTL)
	// The probe, created last, can be created again once it expired: so
	// did lapsed.
	WaitFor(t, "short lease to expire", func() bool { return s.CreateSpotLease(ctx, probe, LongTTL) == nil })
	requireIs(t, s.RenewSpotLease(ctx, lapsed, LongTTL), location.ErrNotFound)
	requireLive(t, s, renewed, LongTTL, true)
}

func testSpotLeaseTombstone(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	l := lease("m", "n", 1)
	requireNoErr(t, s.CreateSpotLease(ctx, l, ShortTTL))
	requireLive(t, s, l, LongTTL, true)
	expire(ShortTTL)
	WaitFor(t, "a check to find the lease gone", func() bool {
		live, err := s.CheckSpotLease(ctx, l, LongTTL)
		return err == nil && !live
	})
	// Tombstoned: neither renewed nor created again, and still gone.
	requireIs(t, s.RenewSpotLease(ctx, l, LongTTL), location.ErrFenced)
	requireIs(t, s.CreateSpotLease(ctx, l, LongTTL), location.ErrFenced)
	requireLive(t, s, l, LongTTL, false)

	// A check of a lease never created tombstones it as well.
	never := lease("m", "n", 2)
	requireLive(t, s, never, LongTTL, false)
	requireIs(t, s.CreateSpotLease(ctx, never, LongTTL), location.ErrFenced)
	requireIs(t, s.RenewSpotLease(ctx, never, LongTTL), location.ErrFenced)

	// A check of a live lease writes nothing; other generations are not
	// affected by a tombstone.
	other := lease("m", "n", 3)
	requireNoErr(t, s.CreateSpotLease(ctx, other, LongTTL))
	requireLive(t, s, other, LongTTL, true)
	requireNoErr(t, s.RenewSpotLease(ctx, other, LongTTL))
	requireNoErr(t, s.DeleteSpotLease(ctx, other))
}

func testSpotLeaseTombstoneExpires(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	// A later check with a shorter tombTTL never shortens a tombstone.
	kept := lease("m", "n", 1)
	requireLive(t, s, kept, LongTTL, false)
	requireLive(t, s, kept, ShortTTL, false)
	short := lease("m", "n", 2)
	requireLive(t, s, short, ShortTTL, false)
	requireIs(t, s.CreateSpotLease(ctx, short, LongTTL), location.ErrFenced)

	expire(ShortTTL)
	WaitFor(t, "the tombstone to expire", func() bool { return s.CreateSpotLease(ctx, short, LongTTL) == nil })
	requireLive(t, s, short, LongTTL, true)
	requireIs(t, s.CreateSpotLease(ctx, kept, LongTTL), location.ErrFenced)
}

// SpotLeaseLive reads a lease and writes nothing: a lease it found absent
// can still be created (no tombstone); live, deleted, expired and
// tombstoned leases read as they are.
func testSpotLeaseLiveReads(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	readLive := func(l location.SpotLease, want bool) {
		t.Helper()
		live, err := s.SpotLeaseLive(ctx, l)
		requireNoErr(t, err)
		if live != want {
			t.Fatalf("SpotLeaseLive(%+v) = %v, want %v", l, live, want)
		}
	}
	l := lease("m", "n", 1<<63+7)
	readLive(l, false)
	requireNoErr(t, s.CreateSpotLease(ctx, l, LongTTL)) // no tombstone was written
	readLive(l, true)
	readLive(lease("m", "n", 1<<63+8), false)     // another generation
	readLive(lease("other", "n", 1<<63+7), false) // another mesh
	requireNoErr(t, s.DeleteSpotLease(ctx, l))
	readLive(l, false)

	short := lease("m", "s", 1)
	requireNoErr(t, s.CreateSpotLease(ctx, short, ShortTTL))
	readLive(short, true)
	expire(ShortTTL)
	WaitFor(t, "the short lease to expire", func() bool {
		live, err := s.SpotLeaseLive(ctx, short)
		return err == nil && !live
	})
	requireLive(t, s, short, LongTTL, false) // tombstones it
	readLive(short, false)

	_, err := s.SpotLeaseLive(ctx, lease("m", "", 1))
	requireIs(t, err, location.ErrInvalid)
}
