package transport

import (
	"errors"

	"github.com/zlink-go/zlink/internal/zguard"
)

var (
	// ErrBadEndpoint: an endpoint that is not tcp://host:port (the same
	// value zguard returns).
	ErrBadEndpoint = zguard.ErrBadEndpoint
	// ErrMalformed: a message that does not have the expected frames. The
	// listener or connection that returned it stays usable.
	ErrMalformed = errors.New("zlink: malformed transport message")
	// ErrClosed: the listener or connection was closed.
	ErrClosed = errors.New("zlink: transport closed")
)
