package liveness

import "errors"

// ErrInvalidConfig is returned (wrapped, with the offending field) by
// Config.Validate, and is the panic value of New for an invalid Config.
var ErrInvalidConfig = errors.New("zlink: invalid liveness config")
