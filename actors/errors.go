package actors

import "errors"

var (
	// ErrStopped is returned when a message is sent to an actor that has
	// stopped or is stopping and no longer admits work, and by Spawn once the
	// System has shut down.
	ErrStopped = errors.New("zlink: actor stopped")
	// ErrTimeout is returned when a request found no reply before its deadline.
	ErrTimeout = errors.New("zlink: timeout")
	// ErrNameTaken is returned by Spawn when the parent already has a child
	// of that name.
	ErrNameTaken = errors.New("zlink: actor name taken")
	// ErrInvalidSpec is returned by Spawn for a Spec it cannot spawn.
	ErrInvalidSpec = errors.New("zlink: invalid actor spec")
)
