package location

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by every Store implementation. Match them with
// errors.Is; implementations wrap them with detail using %w.
var (
	// ErrNotFound: the descriptor, publisher or Spot lease does not exist,
	// has expired, or belongs to a different lifecycle generation.
	ErrNotFound = errors.New("zlink: location record not found")
	// ErrFenced: a compare-and-set on a Spot ownership record (ClaimSpot,
	// ReleaseSpot, TransferSpot) found another record, a Spot lease is
	// tombstoned, or a descriptor write with an older revision lost to a
	// newer state.
	ErrFenced = errors.New("zlink: fenced by a newer ownership or revision")
	// ErrInvalid: the caller passed a malformed record (zero generation,
	// zero revision, empty name, unset enum, reserved characters).
	ErrInvalid = errors.New("zlink: invalid location record")
	// ErrExists: CreateSpotLease found the lease already there (a lease is
	// created once per generation).
	ErrExists = errors.New("zlink: spot lease exists already")
	// ErrUnconfirmed: a Spot directory write was sent to a master with
	// replicas but no replica confirmed it in time (WAIT 1). The write may
	// have been applied on the master; it must not be counted, since a
	// failover may lose it.
	ErrUnconfirmed = errors.New("zlink: write not confirmed by a replica")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("zlink: location store closed")
	// ErrCorrupt: a record read back from the store does not decode, is
	// invalid, exceeds a size limit or contradicts the key it is stored
	// under. Listings skip such records; GetDescriptor and the Spot
	// directory return ErrCorrupt for the one they were asked about.
	ErrCorrupt = errors.New("zlink: corrupted location record")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
