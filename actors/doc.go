// Package actors is the actor-system facade over protoactor-go: spawning named
// actors under a parent with a mailbox budget and a supervisor, Tell and
// Request with admission (a full mailbox is a typed error to the sender, never
// a silent drop or a block), and graceful stop.
//
// It owns the protoactor-go ActorSystem and the routing of its slog output
// into zerolog. It must not know about the wire, meshes or Spots.
package actors
