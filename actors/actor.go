package actors

import "github.com/asynkron/protoactor-go/actor"

// Actor is what a Spec's Producer makes: the behaviour of one incarnation
// of an actor. Receive runs on the actor's own turn, one message at a
// time; it must not block (every message behind it waits).
type Actor interface {
	Receive(c *Context)
}

// ReceiveFunc is a function used as an Actor.
type ReceiveFunc func(c *Context)

// Receive calls f(c).
func (f ReceiveFunc) Receive(c *Context) { f(c) }

// Started is the first message of every incarnation of an actor: at spawn
// and after each restart.
type Started struct{}

// Restarting is the last message of an incarnation its supervisor
// restarts; the next incarnation gets *Started.
type Restarting struct{}

// Stopping is handled when the actor begins to stop (Ref.Stop, Poison, a
// parent stopping or restarting, a supervisor giving up); its children
// stop after it.
type Stopping struct{}

// Stopped is the actor's last message, once its children have stopped.
type Stopped struct{}

// The lifecycle messages the adapter hands over: one value each, so a
// translation allocates nothing.
var (
	startedMsg    = &Started{}
	restartingMsg = &Restarting{}
	stoppingMsg   = &Stopping{}
	stoppedMsg    = &Stopped{}
)

// Context is an actor's view of its current turn: the message, who to
// answer, and the actor itself. One Context serves every message of one
// incarnation (it allocates nothing per message); use it only inside
// that incarnation's Receive, on the actor's own turn — hand c.Self() or
// c.ReplyTo() to anything that runs elsewhere.
type Context struct {
	ref   *Ref
	inner Actor
	pc    actor.Context // protoactor's context of this actor, set on every message
	// current is the user message being handled (and its sender); it
	// stays set when the handler panics, so it can still be answered.
	current any
	sender  *actor.PID
}

// Message returns the message being handled: what a sender passed to
// Tell or Request, or one of *Started, *Restarting, *Stopping, *Stopped.
func (c *Context) Message() any {
	switch m := c.pc.Message().(type) {
	case *actor.Started:
		return startedMsg
	case *actor.Restarting:
		return restartingMsg
	case *actor.Stopping:
		return stoppingMsg
	case *actor.Stopped:
		return stoppedMsg
	default:
		return m
	}
}

// Respond answers the Request being handled with v. For a message sent
// with Tell (nobody waits) it does nothing.
func (c *Context) Respond(v any) {
	if c.pc.Sender() != nil {
		c.pc.Respond(v)
	}
}

// Self returns the actor's Ref: the same Ref for every incarnation.
func (c *Context) Self() *Ref { return c.ref }

// ReplyTo returns where asynchronous answers to this actor go (see
// ReplyTo).
func (c *Context) ReplyTo() ReplyTo { return ReplyTo{r: c.ref} }

// Spawn starts spec as a child of this actor, supervised by it;
// spec.Parent is ignored.
func (c *Context) Spawn(spec Spec) (*Ref, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	return c.ref.sys.spawn(c.pc, c.ref.path, spec)
}

// Poison stops this actor once the messages already in its mailbox are
// handled (a poison pill queued behind them); it does not wait. Messages
// admitted after it are not handled: an actor that is a FailureHandler
// gets them in MessageDropped.
func (c *Context) Poison() { c.pc.Poison(c.pc.Self()) }
