package actors

import "errors"

var (
	// ErrStopped is returned when a message is sent to an actor that has
	// stopped or is stopping and no longer admits work.
	ErrStopped = errors.New("zlink: actor stopped")
	// ErrTimeout is returned when a request found no reply before its deadline.
	ErrTimeout = errors.New("zlink: timeout")
)
