package mailbox

import "fmt"

// Panic is the failure reason a mailbox escalates to the actor's supervisor
// when a handler panics: the recovered value and the stack of the panicking
// goroutine.
type Panic struct {
	Value any    // the value passed to panic
	Stack []byte // runtime/debug.Stack() at recovery
}

// Error returns "zlink: panic: <value>".
func (p *Panic) Error() string { return fmt.Sprintf("zlink: panic: %v", p.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (p *Panic) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}
