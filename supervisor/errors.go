package supervisor

import "errors"

var (
	// ErrUnrecoverable marks a failure that must not be retried: a
	// supervisor stops the failing child instead of restarting it. Wrap it
	// (fmt.Errorf("...: %w", ErrUnrecoverable)) or panic with such an error.
	ErrUnrecoverable = errors.New("zlink: unrecoverable failure")
	// ErrDuplicatePath is returned by (*Registry).Add when the path is taken.
	ErrDuplicatePath = errors.New("zlink: actor path already registered")
)
