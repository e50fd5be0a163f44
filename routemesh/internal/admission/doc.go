// Package admission is the pure peer-admission machine of one MeshNode: given
// the identity a remote proved in the handshake, it decides whether a pipe
// becomes the one ready connection to that peer (Accept), is refused with a
// reason (Reject), ends as the terminal NotRequired, is a second pipe to a
// peer that already has a ready one (Duplicate), takes over from a pipe the
// peer no longer holds (Replace), or must wait until liveness has confirmed
// that the peer's previous lifecycle is gone (Defer).
//
// It owns: the current pipe per remote RID and its lifecycle generation, the
// duplicate-pipe rule (per pair of nodes the smaller RID is the arbiter: it
// keeps the first pipe that becomes ready and refuses every other one; the
// follower becomes ready only on the pipe the arbiter declared ready, so a
// ready pipe is never torn down to resolve a duplicate), the generation
// fence for restarted fixed-RID peers, and the memory of intents that ended
// NotRequired (so they are not dialled again).
//
// Usage: the handshake machine (routemesh/internal/handshake) calls Check
// while a pipe's handshake runs and Admit when the pipe is about to become
// ready, and the MeshNode actor executes the returned Decision (closing the
// pipe named in Decision.Close); the actor reports ended pipes with
// PipeClosed and liveness-confirmed losses with PeerLost, and drops frames
// from pipes for which IsCurrent is false. Before dialling a manual intent it asks
// ShouldDial. Automatic discovery uses NeedsConnection and Initiator to
// decide whether, and which side, dials.
//
// A Machine is not safe for concurrent use: exactly one goroutine (the
// MeshNode actor) owns it. It does no I/O, starts no goroutines, reads no
// clock and logs nothing. It must not import the wire package, zmq4 or
// protoactor: the actors translate frames into Identity and Pipe values.
package admission
