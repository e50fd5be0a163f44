// Package supervisor owns how ZLink actors supervise their children and the
// live supervision-tree registry.
//
// Config describes one supervisor: one-for-one or all-for-one, a restart
// intensity (at most MaxRestarts restarts within Within, past that the
// failure is escalated to the supervisor's own parent), an optional
// exponential backoff before a restart, and a stop (no restart) for failures
// that match ErrUnrecoverable. The actors package applies it (through
// internal/pasupervisor, which turns it into a protoactor strategy) and
// records failures, restarts and states in a Registry; no exported
// signature here names a protoactor type.
//
// Registry is the live tree: path, kind, state, restart count, last failure
// and mailbox depth/bytes (read live from each actor's *mailbox.Quota). It is
// a thread-safe leaf structure; Snapshot and Find return deep copies.
// A child's registry path is its parent's path + "/" + its name.
//
// It must not spawn actors, send user messages or know about the wire,
// meshes or Spots; the actors package drives it.
package supervisor
