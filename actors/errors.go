package actors

import (
	"errors"

	"github.com/zlink-go/zlink/internal/zerr"
)

var (
	// ErrStopped is returned when a message is sent to an actor that has
	// stopped or is stopping and no longer admits work, and by Spawn once the
	// System has shut down. Same value as zlink.ErrStopped.
	ErrStopped = zerr.ErrStopped
	// ErrTimeout is returned when a request found no reply before its
	// deadline. Same value as zlink.ErrTimeout and zerr.ErrTimeout.
	ErrTimeout = zerr.ErrTimeout
	// ErrNameTaken is returned by Spawn when the parent already has a child
	// of that name.
	ErrNameTaken = errors.New("zlink: actor name taken")
	// ErrInvalidSpec is returned by Spawn for a Spec it cannot spawn.
	ErrInvalidSpec = errors.New("zlink: invalid actor spec")
)
