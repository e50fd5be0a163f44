// Package spot owns Spots: virtual actors addressed by (kind, ID) and
// never by node. A kind is registered on the Object Servers that host it
// with a state constructor and typed handlers (NewKind, On, OnSend); each
// server publishes its kinds in its descriptor (routemesh.KindHost);
// callers use Call and Send. The runtime places an unowned Spot on a
// ready, non-draining Object Server that hosts its kind
// (spot/internal/placement), claims it through
// the ownership record in the Location Store under the fencing rules of
// internal/fence, activates it as a supervised actor with a bounded
// mailbox, redirects callers that reach a non-owner, deactivates idle
// Spots, and releases records on drain and stop. It fires timers (one
// clock per node) and durable reminders (reminders.go: the Object Server
// that rendezvous picks for a part of a kind's due-time index reads it and
// delivers what is due as ordinary calls; the owner's turn fires and moves
// the reminder on with a fenced write).
//
// It attaches to a MeshNode as a routemesh.Extension (Enable) and talks to
// other nodes through Node-direct requests of one packet name. It owns the
// Spot actors, the ownership lease of its node, the caller cache and the
// Spot wire payloads; it must not touch RouteMesh internals (it uses the
// Node's public and extension API) or the store's keys (it uses the
// location.SpotDirectory and location.SpotReminders APIs). docs/spots.md states the model, the
// guarantee and the rules.
//
// With a routemesh.Tracer on its node, every Spot turn is a span in the
// caller's trace, and the calls a turn makes continue it (trace.go).
package spot
