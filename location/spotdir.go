package location

import (
	"context"
	"time"
)

// SpotLease is one node lifecycle's ownership lease for Spots: the key
// that keeps every ownership record naming (Mesh, RID, Generation) valid.
// It is separate from the node's descriptor: a lease is created once per
// generation and afterwards only renewed (rule R1 in docs/spots.md); a
// node whose renewal is refused fences its Spots and starts a new lease
// generation, while its descriptor (routing) lives on.
type SpotLease struct {
	Mesh       string
	RID        string
	Generation uint64 // non-zero; a new one after every refused renewal
}

// SpotDirectory is the Spot ownership directory of a Store. Every Spot's
// record lives under its own hash tag ({spot:<mesh>:<kind>:<id>}) and
// every lease under its owner's ({spotlease:<mesh>:<rid>}), so on Redis
// Cluster they spread over slots and every operation touches one slot.
// A claim is therefore several steps, each one call (internal/fence plans
// them): read the record, check the recorded owner's lease (tombstoning it
// when gone), compare-and-set.
//
// On Redis shards with replicas, every write here counts only once a
// replica confirmed it (WAIT); otherwise it returns ErrUnconfirmed and the
// caller must treat it as not done (it may or may not survive a failover).
type SpotDirectory interface {
	// CreateSpotLease creates the lease (NX) with ttl. ErrFenced if the
	// lease is tombstoned; ErrExists if it exists already (a lease is
	// created once per generation).
	CreateSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	// RenewSpotLease extends an existing lease (XX). ErrFenced if it is
	// tombstoned; ErrNotFound if it is gone. Never creates it.
	RenewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	// DeleteSpotLease removes the lease (clean shutdown, after releasing
	// every record). ErrNotFound if gone.
	DeleteSpotLease(ctx context.Context, l SpotLease) error
	// CheckSpotLease reports whether the lease is live. When it is not, it
	// writes a tombstone for (Mesh, RID, Generation) kept for tombTTL in
	// the same atomic step, so the lease can never be created or renewed
	// again, and returns false.
	CheckSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error)
	// SpotRecord reads the ownership record of (mesh, kind, id) from the
	// master. A Spot never claimed returns a zero owner and epoch 0; a
	// released one a zero owner and the epoch it had. It does not look at
	// the owner's lease.
	SpotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error)
	// ClaimSpot writes next if the record's owner RID, generation and
	// epoch all equal expect's (an unowned record matches an expect with
	// an empty OwnerRID and the same epoch). next must name an owner and
	// have Epoch > expect.Epoch. On a mismatch it returns the current
	// record and ErrFenced.
	ClaimSpot(ctx context.Context, expect, next Ownership) (Ownership, error)
	// ReleaseSpot clears the owner if the record equals o (RID,
	// generation, epoch); the epoch is kept. Else ErrFenced.
	ReleaseSpot(ctx context.Context, o Ownership) error
	// TransferSpot moves ownership from `from` (compared on all three
	// fields) to (toRID, toGen) with Epoch = from.Epoch + 1. Else
	// ErrFenced. The target's lease is not checked (another slot): the
	// caller checks it first.
	TransferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error)
}
