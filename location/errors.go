package location

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by every Store implementation. Match them with
// errors.Is; implementations wrap them with detail using %w.
var (
	// ErrNotFound: the descriptor, publisher or ownership record does not
	// exist, has expired, or belongs to a different lifecycle generation.
	ErrNotFound = errors.New("zlink: location record not found")
	// ErrOwned: a Spot is owned by another live owner. Claim returns it as
	// an *OwnedError carrying the holder.
	ErrOwned = errors.New("zlink: spot owned by another node")
	// ErrFenced: a compare-and-set on an ownership record (Transfer,
	// Release) or a descriptor write with an older revision lost to a newer
	// state.
	ErrFenced = errors.New("zlink: fenced by a newer ownership or revision")
	// ErrInvalid: the caller passed a malformed record (zero generation,
	// zero revision, empty name, unset enum, reserved characters).
	ErrInvalid = errors.New("zlink: invalid location record")
	// ErrNoLease: Claim or Transfer named an owner whose descriptor (same
	// mesh, RID and generation) is not live, so the ownership could never
	// be valid.
	ErrNoLease = errors.New("zlink: owner descriptor lease not live")
	// ErrExists: CreateSpotLease found the lease already there (a lease is
	// created once per generation).
	ErrExists = errors.New("zlink: spot lease exists already")
	// ErrUnconfirmed: a Spot directory write reached the master but no
	// replica confirmed it in time (WAIT); it must not be counted, since a
	// failover may lose it.
	ErrUnconfirmed = errors.New("zlink: write not confirmed by a replica")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("zlink: location store closed")
	// ErrCorrupt: a record read back from the store does not decode, is
	// invalid, exceeds a size limit or contradicts the key it is stored
	// under. Listings skip such records; GetDescriptor, Owner and Claim
	// return ErrCorrupt for the one they were asked about.
	ErrCorrupt = errors.New("zlink: corrupted location record")
)

// OwnedError is returned by Claim when another live owner holds the Spot.
// errors.Is(err, ErrOwned) is true.
type OwnedError struct {
	Holder Ownership // the current, live ownership record
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("zlink: spot %s/%s in mesh %q owned by %s (generation %d, epoch %d)",
		e.Holder.Kind, e.Holder.ID, e.Holder.Mesh, e.Holder.OwnerRID, e.Holder.OwnerGeneration, e.Holder.Epoch)
}

// Is reports whether target is ErrOwned.
func (e *OwnedError) Is(target error) bool { return target == ErrOwned }

// Unwrap returns ErrOwned.
func (e *OwnedError) Unwrap() error { return ErrOwned }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
