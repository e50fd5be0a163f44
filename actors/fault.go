package actors

import (
	"fmt"
)

// FailureHandler is implemented by an actor that must answer the message
// it was handling when it panicked. protoactor drops that message on
// restart; the cell hands it to MessageFailed on the old instance first
// (on *actor.Restarting, or on *actor.Stopping when the supervisor gave
// up), so a request always gets its terminal result. MessageFailed runs on
// the actor's own goroutine and must not block.
type FailureHandler interface {
	MessageFailed(msg any)
}

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
