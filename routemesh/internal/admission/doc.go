// Package admission is the pure peer-admission machine of one MeshNode: given
// the identity a remote proved in the handshake, it decides whether a pipe
// becomes the one ready connection to that peer (Accept), is refused with a
// reason (Reject), ends as the terminal NotRequired, loses a duplicate-pipe
// race (Duplicate), displaces a losing duplicate (Replace), or must wait until
// liveness has confirmed that the peer's previous lifecycle is gone (Defer).
//
// It owns: the current pipe per remote RID and its lifecycle generation, the
// deterministic duplicate-pipe rule both sides compute identically, the
// generation fence for restarted fixed-RID peers, and the memory of intents
// that ended NotRequired (so they are not dialled again).
//
// Usage: the MeshNode actor creates one Machine with New, translates every
// finished handshake into Admit and executes the returned Decision (closing
// the pipe named in Decision.Close), reports ended pipes with PipeClosed and
// liveness-confirmed losses with PeerLost, and drops frames from pipes for
// which IsCurrent is false. Before dialling a manual intent it asks
// ShouldDial. Automatic discovery uses NeedsConnection and Initiator to
// decide whether, and which side, dials.
//
// A Machine is not safe for concurrent use: exactly one goroutine (the
// MeshNode actor) owns it. It does no I/O, starts no goroutines, reads no
// clock and logs nothing. It must not import the wire package, zmq4 or
// protoactor: the actors translate frames into Identity and Pipe values.
package admission
