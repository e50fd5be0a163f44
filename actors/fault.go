package actors

import (
	"errors"
	"fmt"
)

// ErrFailed is what Request returns when the actor panicked while
// handling that very request (the actor restarts; the request is not
// retried).
var ErrFailed = errors.New("zlink: actor failed while handling the request")

// FailureHandler is implemented by an actor that must answer every message
// it admitted, whatever happens to it. Both methods run on the actor's own
// goroutine and must not block.
//
// MessageFailed gets the message the actor was handling when it panicked:
// protoactor drops that message on restart, so the cell hands it over on
// the old instance first (on *Restarting, or on *Stopping when
// the supervisor gave up). MessageDropped gets each message that was
// admitted but never handled because the actor stopped (Stop, a parent's
// restart, a supervisor giving up).
//
// A Request's caller needs neither: it gets ErrFailed or ErrStopped.
type FailureHandler interface {
	MessageFailed(msg any)
	MessageDropped(msg any)
}

// failedReply answers a Request whose handler panicked.
type failedReply struct{}

// injectedPanic makes the receiving actor panic with reason, before its
// own Receive sees anything: the fault-injection hook of InjectPanic.
type injectedPanic struct{ reason string }

// InjectPanic makes the actor at path panic on its next turn with reason,
// as if its own code had panicked: its supervisor restarts it (or gives up
// past the restart intensity), and the tree records the failure. It is
// the hook chaos tests use to prove that every actor kind comes back
// whole; it is safe for concurrent use. The message goes through the
// actor's admission like any other (ErrMailboxFull when it is full,
// ErrStopped when it is gone).
func (s *System) InjectPanic(path, reason string) error {
	s.mu.Lock()
	r := s.refs[path]
	s.mu.Unlock()
	if r == nil {
		return fmt.Errorf("%w: no actor at %s", ErrStopped, path)
	}
	return r.Tell(&injectedPanic{reason: reason})
}

// Lookup returns the live actor at path, or nil.
func (s *System) Lookup(path string) *Ref {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refs[path]
}

// Self returns the Ref of the actor owning c.
//
// Deprecated: use c.Self().
func (s *System) Self(c *Context) *Ref { return c.Self() }
