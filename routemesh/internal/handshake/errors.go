package handshake

import "errors"

// ErrInvalidConfig is the panic value (wrapped, with the offending field) of
// New for a non-positive Timeout or a nil admission machine: a bug of the
// caller, not peer input.
var ErrInvalidConfig = errors.New("zlink: invalid handshake config")
