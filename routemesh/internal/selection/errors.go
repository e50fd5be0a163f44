package selection

import "errors"

// ErrInvalidMember is returned (wrapped, with the offending field) by
// Member.Validate, and is the panic value of Table.Apply for an invalid
// member: the caller validates peer input before applying it.
var ErrInvalidMember = errors.New("zlink: invalid channel member")
