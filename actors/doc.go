// Package actors is the actor-system facade over protoactor-go: spawning named
// actors under a parent with a mailbox budget and a supervisor, Tell and
// Request with admission (a full mailbox is a typed error to the sender, never
// a silent drop or a block), and graceful stop.
//
// A System wraps one protoactor ActorSystem and one supervisor.Registry.
// Spawn(Spec) starts an actor with its own mailbox.Quota and bounded mailbox,
// under a parent Ref (or at top level, supervised by Config.TopLevel), and
// registers it at path parent path + "/" + Name. The returned *Ref is safe for
// concurrent use: Tell and Request admit against the quota before posting,
// Stop drains what was admitted and then stops the actor.
//
// An actor is an Actor: Receive(c *Context), one message at a time on its
// own turn. c.Message() is the message exactly as sent, or one of the
// lifecycle messages *Started, *Restarting, *Stopping, *Stopped. Inside
// Receive, answer a Request with c.Respond(x), get the actor's own Ref
// with c.Self(), spawn children with c.Spawn(spec), stop the actor after
// what it has queued with c.Poison(), and hand c.ReplyTo() to a call that
// answers later. One Context serves every message of an incarnation: the
// adapter adds no allocation per message.
//
// An actor spawned with Spec.Pooled runs its mailbox on the System's
// elastic pooled dispatcher: on a parked worker goroutine (one
// that kept its grown stack) instead of a new goroutine per schedule,
// never queued behind a busy one.
//
// It owns the protoactor-go ActorSystem and the routing of its slog output
// into zerolog; no exported signature names a protoactor type (held by
// TestLayering_NoProtoactorInPublicAPI). It must not know about the wire,
// meshes or Spots.
package actors
