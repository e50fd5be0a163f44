package admission

import "errors"

// ErrInvalidIdentity is the panic value (wrapped) when New is given a local
// identity that cannot take part in a mesh: empty MeshName, RID or security
// identity, or generation 0. It is a configuration bug of the caller, not
// peer input.
var ErrInvalidIdentity = errors.New("zlink: invalid local identity")
