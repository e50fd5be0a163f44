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
// Inside an actor, reply to a Request with c.Respond(x), and spawn children
// with (*System).SpawnChild(c, spec). The actor sees the messages exactly as
// sent (the size wrapper is removed by the mailbox) plus protoactor's
// lifecycle messages (*actor.Started, *actor.Stopping, ...).
//
// Pool is an elastic pooled dispatcher: an actor spawned with Spec.Pooled
// runs its mailbox on a parked worker goroutine of the System's Pool (one
// that kept its grown stack) instead of a new goroutine per schedule,
// never queued behind a busy one.
//
// It owns the protoactor-go ActorSystem and the routing of its slog output
// into zerolog. It must not know about the wire, meshes or Spots.
package actors
