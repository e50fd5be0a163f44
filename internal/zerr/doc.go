// Package zerr owns the sentinel errors that more than one ZLink package
// returns: the terminal results of a call (ErrNoTarget, ErrTimeout,
// ErrMailboxFull, ErrBusy, ErrPeerLost, ErrTooLarge, ErrHandler,
// ErrCancelled, ErrShuttingDown), the wire's protocol and codec refusals
// (ErrProtocol, ErrUnknownPacket, ErrBadPayload), the refusal of a stopped
// actor (ErrStopped) and the startup refusal shared by RouteMesh and fanout
// (ErrNeedsLocationStore).
//
// Each value exists once, here, so mailbox, actors, wire, fanout and
// routemesh return the same error for the same condition and errors.Is
// matches it whichever package produced it. The wire codes that carry these
// errors between nodes live in wire (wire.Code); this package knows nothing
// about them.
//
// Users match these errors through the re-exports of package zlink (and of
// the public packages whose API returns them, e.g. mailbox.ErrMailboxFull).
//
// It is a leaf: it imports only the standard library and must never import
// another package of this module.
package zerr
