package location

import (
	"context"
	"time"
)

// Store is the Location Store: the narrow interfaces each of its users
// needs — Descriptors (MeshNodes), Publishers (fanout), SpotDirectory and
// SpotStates (Spots) — and Close. Implementations are safe for concurrent
// use by many goroutines. Every method may block on I/O (Redis) and
// honours ctx; none blocks forever when ctx has a deadline.
type Store interface {
	Descriptors
	Publishers
	SpotStates
	// SpotDirectory holds the Spot ownership records and the Spot leases
	// of node lifecycles (see spotdir.go).
	SpotDirectory

	// Close releases resources, ends every Watch and waits for the
	// store's goroutines. Idempotent. Later calls return ErrClosed.
	Close() error
}

// Descriptors are the MeshNode descriptors of every mesh: leases, the
// mesh's revision and change log, watches. A MeshNode's lease and
// discovery use them.
type Descriptors interface {
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
	// ListDescriptors returns the live descriptors of mesh sorted by RID:
	// a read of the whole mesh (a reader that follows the mesh reads
	// DescriptorChanges instead).
	ListDescriptors(ctx context.Context, mesh string) ([]Descriptor, error)
	// GetDescriptor returns the live descriptor (mesh, rid) or ErrNotFound.
	GetDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error)
	// Watch streams change hints for mesh until ctx ends or the store is
	// closed; then the channel is closed. Events are coalesced per RID when
	// the consumer is slow; the store never blocks on a consumer. Writes
	// push their hints at once; a poll every poll interval reads the
	// mesh's revision (one small read) and recovers pushes lost on the way,
	// and the watch takes its share of finding lapsed leases
	// (ExpireDescriptors), so an expiry is announced too. Typical use:
	// Watch, then DescriptorChanges from the zero revision, then
	// DescriptorChanges since the last revision on every event.
	Watch(ctx context.Context, mesh string) (<-chan Event, error)

	// DescriptorRevision returns the mesh's current revision: one small
	// read, whatever the size of the mesh. It changes with every
	// descriptor that appears, changes (not a renewal) or goes.
	DescriptorRevision(ctx context.Context, mesh string) (MeshRevision, error)
	// DescriptorChanges returns what changed in mesh since revision since:
	// the descriptors put since (current content) and the RIDs gone since,
	// read in one step with the revision they bring the reader to. Its
	// cost grows with what changed, not with the mesh. When the store
	// cannot tell (since is the zero revision, of another epoch, older
	// than the change log keeps, or ahead of the store) the answer is
	// Full: every live descriptor, which replaces the reader's view.
	DescriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error)
	// ExpireDescriptors removes descriptors of mesh whose lease lapsed
	// (at most a bounded number per call) as a delete would: the revision
	// moves and watches get a delete hint. It returns how many it removed
	// and how many live descriptors the mesh holds. When none lapsed its
	// cost does not depend on the mesh's size. Watch calls it (each watch
	// of a mesh a share, so that the mesh is swept about once per poll
	// interval in all); a reader that does not watch may call it itself.
	ExpireDescriptors(ctx context.Context, mesh string) (removed, live int, err error)
}

// Publishers are the fanout publishers of every channel, under leases. A
// fanout publisher (automatic) and subscriber (automatic) use them.
type Publishers interface {
	// PutPublisher writes a fanout publisher descriptor under a TTL lease.
	PutPublisher(ctx context.Context, p Publisher, ttl time.Duration) error
	// ListPublishers returns the live publishers of a fanout channel sorted
	// by RID.
	ListPublishers(ctx context.Context, channel string) ([]Publisher, error)
	// DeletePublisher removes (channel, rid) if the stored generation is
	// gen; ErrNotFound otherwise.
	DeletePublisher(ctx context.Context, channel, rid string, gen uint64) error
}
