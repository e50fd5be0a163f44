package location

import (
	"context"
	"time"
)

// Store is the Location Store. Implementations are safe for concurrent use
// by many goroutines. Every method may block on I/O (Redis) and honours ctx;
// none blocks forever when ctx has a deadline.
type Store interface {
	// PutDescriptor writes d under a TTL lease. Writing again renews the
	// lease. Rejects generation 0, revision 0, empty names and an unset
	// ObjectRole with ErrInvalid; rejects a revision lower than the stored
	// one of the same generation with ErrFenced. A different generation
	// replaces the stored descriptor (a new lifecycle of the same RID).
	PutDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error
	// RenewDescriptor extends the lease of (mesh, rid) if the stored
	// generation is gen; ErrNotFound if gone or a different generation.
	RenewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error
	// DeleteDescriptor removes (mesh, rid) if the stored generation is gen;
	// ErrNotFound if gone or a different generation.
	DeleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error
	// ListDescriptors returns the live descriptors of mesh sorted by RID.
	ListDescriptors(ctx context.Context, mesh string) ([]Descriptor, error)
	// GetDescriptor returns the live descriptor (mesh, rid) or ErrNotFound.
	GetDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error)
	// Watch streams change hints for mesh until ctx ends or the store is
	// closed; then the channel is closed. Events are coalesced per RID when
	// the consumer is slow; the store never blocks on a consumer. Expiry is
	// detected by polling. Typical use: Watch, then ListDescriptors, then
	// re-read on every event.
	Watch(ctx context.Context, mesh string) (<-chan Event, error)

	// PutPublisher writes a fanout publisher descriptor under a TTL lease.
	PutPublisher(ctx context.Context, p Publisher, ttl time.Duration) error
	// ListPublishers returns the live publishers of a fanout channel sorted
	// by RID.
	ListPublishers(ctx context.Context, channel string) ([]Publisher, error)
	// DeletePublisher removes (channel, rid) if the stored generation is
	// gen; ErrNotFound otherwise.
	DeletePublisher(ctx context.Context, channel, rid string, gen uint64) error

	// Claim takes ownership of the Spot (o.Mesh, o.Kind, o.ID) for
	// (o.OwnerRID, o.OwnerGeneration); o.Epoch is ignored. The claimer's
	// descriptor must be live (else ErrNoLease). Succeeds with Epoch =
	// previous epoch + 1 (or 1) when nobody owns the Spot or the recorded
	// owner's descriptor with that generation is gone. A re-claim by the
	// current owner returns the record unchanged. If another live owner
	// holds it, returns the current record and an *OwnedError (ErrOwned).
	Claim(ctx context.Context, o Ownership) (Ownership, error)
	// Transfer moves ownership to (toRID, toGen) only if the record still
	// equals from (owner, generation, epoch) and from's descriptor is live;
	// else ErrFenced. The target's descriptor must be live (else
	// ErrNoLease). The new record has Epoch = from.Epoch + 1.
	Transfer(ctx context.Context, from Ownership, toRID string, toGen uint64) (Ownership, error)
	// Release gives up ownership only if the record still equals o (epoch
	// included); else ErrFenced. The epoch is kept so the next Claim gets a
	// higher one.
	Release(ctx context.Context, o Ownership) error
	// Owner returns the current ownership record; ErrNotFound if none or
	// the owner's descriptor is gone.
	Owner(ctx context.Context, mesh, kind, id string) (Ownership, error)

	// Close releases resources, ends every Watch and waits for the
	// store's goroutines. Idempotent. Later calls return ErrClosed.
	Close() error
}
