package location

import (
	"context"
	"fmt"
	"time"
)

// SpotLease is one node lifecycle's ownership lease for Spots: the key
// that keeps every ownership record naming (Mesh, RID, Generation) valid.
// It is separate from the node's descriptor: a lease is created once per
// generation and afterwards only renewed (rule R1 in docs/spots.md); a
// node whose renewal is refused fences its Spots and starts a new lease
// generation, while its descriptor (routing) lives on.
type SpotLease struct {
	Mesh       string // must not contain ':' (nor '{', '}')
	RID        string // 1..256 bytes
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
// replica confirmed it (WAIT 1, see RedisConfig.ReplicaAcks); otherwise it
// returns an error matching ErrUnconfirmed and the caller must treat it as
// not done (it may or may not survive a failover). A refusal (ErrExists,
// ErrFenced, ErrNotFound) wrote nothing and needs no confirmation.
//
// Every method validates its arguments first (ErrInvalid): mesh names
// without ':', '{' or '}', Spot kinds without ':', non-empty IDs, owner
// RIDs of 1..256 bytes with a non-zero generation, epochs up to
// 999999999999999 and TTLs of at least 1ms. A stored record that is not
// one this package writes fails with ErrCorrupt (see "Records read back"
// in the package documentation).
type SpotDirectory interface {
	// CreateSpotLease creates the lease (NX) with ttl. ErrFenced if the
	// lease is tombstoned; ErrExists if it exists already (a lease is
	// created once per generation).
	CreateSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	// RenewSpotLease extends an existing lease (XX) to ttl from now.
	// ErrFenced if it is tombstoned; ErrNotFound if it is gone. Never
	// creates it.
	RenewSpotLease(ctx context.Context, l SpotLease, ttl time.Duration) error
	// DeleteSpotLease removes the lease (clean shutdown, after releasing
	// every record). ErrNotFound if gone.
	DeleteSpotLease(ctx context.Context, l SpotLease) error
	// CheckSpotLease reports whether the lease is live. When it is not, it
	// writes a tombstone for (Mesh, RID, Generation) kept for tombTTL in
	// the same atomic step (an existing tombstone is never shortened), so
	// the lease can never be created or renewed again while the tombstone
	// lives, and returns false. Only false is a write (to confirm).
	CheckSpotLease(ctx context.Context, l SpotLease, tombTTL time.Duration) (bool, error)
	// SpotLeaseLive reports whether the lease is live, and writes
	// nothing: unlike CheckSpotLease it leaves no tombstone, so it may
	// answer false for a lease that is then created (it is for readers
	// such as spot.Owner, never for a claim's decision).
	SpotLeaseLive(ctx context.Context, l SpotLease) (bool, error)
	// SpotRecord reads the ownership record of (mesh, kind, id) from the
	// master (never a replica or a client-side cache). A Spot never
	// claimed returns a zero owner and epoch 0; a released one a zero
	// owner and the epoch it had. Mesh, Kind and ID are always set. It
	// does not look at the owner's lease.
	SpotRecord(ctx context.Context, mesh, kind, id string) (Ownership, error)
	// ClaimSpot writes next if the record's owner RID, generation and
	// epoch all equal expect's (an absent record equals {"", 0, 0}; a
	// released one {"", 0, its epoch}). expect and next name the same
	// Spot; next must name an owner and have expect.Epoch < next.Epoch.
	// It returns next on success. On a mismatch it returns the current
	// record and an error matching ErrFenced; on a corrupt record
	// ErrCorrupt (nothing written).
	ClaimSpot(ctx context.Context, expect, next Ownership) (Ownership, error)
	// ClaimSpotIn is ClaimSpot that also returns the incarnation of the
	// store shard that applied the write (see SpotIncarnation).
	ClaimSpotIn(ctx context.Context, expect, next Ownership) (Ownership, string, error)
	// SpotIncarnation returns the incarnation of the store shard that
	// serves the Spot's record now: an identity that changes whenever the
	// shard's data may have been lost — a failover promoted a replica, the
	// server restarted empty. An activation is confirmed while the shard
	// that took its claim still answers with the same incarnation.
	SpotIncarnation(ctx context.Context, mesh, kind, id string) (string, error)
	// ReleaseSpot clears the owner if the record equals o (RID,
	// generation, epoch); the epoch is kept. Else ErrFenced (also
	// matching ErrCorrupt when the stored record is corrupt).
	ReleaseSpot(ctx context.Context, o Ownership) error
	// TransferSpot moves ownership from `from` (compared on all three
	// fields) to (toRID, toGen) with Epoch = from.Epoch + 1 and returns
	// the new record. Else it returns the current record and ErrFenced
	// (also matching ErrCorrupt, with a zero record, when the stored
	// record is corrupt). The target's lease is not checked (another
	// slot): the caller checks it first.
	TransferSpot(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error)
}

func (l SpotLease) validate() error {
	if err := validSpotMesh(l.Mesh); err != nil {
		return err
	}
	if err := validHolder(l.RID, l.Generation); err != nil {
		return fmt.Errorf("spot lease: %w", err)
	}
	return nil
}

// validClaim checks the arguments of ClaimSpot.
func validClaim(expect, next Ownership) error {
	if err := next.validateOwner(); err != nil {
		return err
	}
	if expect.Mesh != next.Mesh || expect.Kind != next.Kind || expect.ID != next.ID {
		return invalidf("claim expects spot %.64s/%.64s/%.64s, writes %s/%s/%s",
			expect.Mesh, expect.Kind, expect.ID, next.Mesh, next.Kind, next.ID)
	}
	if expect.OwnerRID == "" {
		if expect.OwnerGeneration != 0 {
			return invalidf("claim of %s/%s expects no owner with generation %d", next.Kind, next.ID, expect.OwnerGeneration)
		}
	} else if err := validHolder(expect.OwnerRID, expect.OwnerGeneration); err != nil {
		return fmt.Errorf("claim of %s/%s expects: %w", next.Kind, next.ID, err)
	}
	if expect.Epoch >= next.Epoch {
		return invalidf("claim of %s/%s: epoch %d not above the expected %d", next.Kind, next.ID, next.Epoch, expect.Epoch)
	}
	return nil
}

// validTransfer checks the arguments of TransferSpot.
func validTransfer(from Ownership, toRID string, toGen uint64) error {
	if err := from.validateOwner(); err != nil {
		return err
	}
	if from.Epoch >= maxEpoch {
		return invalidf("transfer of %s/%s: epoch %d has no successor", from.Kind, from.ID, from.Epoch)
	}
	if err := validHolder(toRID, toGen); err != nil {
		return fmt.Errorf("transfer of %s/%s to: %w", from.Kind, from.ID, err)
	}
	return nil
}
