package location

import (
	"context"
	"time"
)

// Store is the Location Store. Implementations are safe for concurrent use
// by many goroutines. Every method may block on I/O (Redis) and honours ctx;
// none blocks forever when ctx has a deadline.
type Store interface {
	SpotStates
	// SpotDirectory holds the Spot ownership records and the Spot leases
	// of node lifecycles (see spotdir.go).
	SpotDirectory

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

	// Close releases resources, ends every Watch and waits for the
	// store's goroutines. Idempotent. Later calls return ErrClosed.
	Close() error
}
