package routemesh

// Mailbox budgets of the node's own actors (the channel and Node-direct
// owners take theirs from SocketConfig). Every actor of a node has a
// bound the tree shows:
//
//   - The mesh actor and each peer actor take traffic others can send —
//     handshake frames and hellos from whoever connects, control envelopes
//     (heartbeats, weight updates) from peers, status requests from the
//     admin API: message and byte budgets bound it, and a refusal drops
//     that one message (a handshake is retried by its dialer; a heartbeat
//     is followed by the next).
//   - Control messages — a peer lost or closed, a dial's or a discovery
//     round's result, a descriptor change, drain, undrain, weights, stop,
//     the actor's own timers — go through actors.Ref.TellControl and
//     RequestControl: never refused for want of budget (they are bounded
//     by construction: one per event the actor waits for), counted in the
//     depth all the same.
//   - The listener, lease and writer actors and the channels supervisor
//     receive lifecycle messages and at most one panic report per owned
//     goroutine; the discovery actor at most one round and one listing of
//     its own in flight plus the acknowledgements of the changes it handed
//     over. Their budgets are that bound, not a limit anything reaches.
const (
	meshMailboxMessages  = 4096
	meshMailboxBytes     = 4 << 20
	peerMailboxMessages  = 1024
	peerMailboxBytes     = 4 << 20
	ownedMailboxMessages = 8
	discoveryMailbox     = 1024

	// handshakeFrameSize is what a handshake frame or hello counts against
	// the mesh actor's byte budget (the wire bounds their encoded size).
	handshakeFrameSize = 1 << 10
)

// Size is what a hello counts against the mesh actor's byte budget.
func (*inboundHello) Size() int { return handshakeFrameSize }

// Size is what a handshake frame counts against the mesh actor's byte
// budget.
func (*handshakeFrame) Size() int { return handshakeFrameSize }

// Size is what a control envelope counts against its peer actor's byte
// budget.
func (e *controlEnv) Size() int { return len(e.env.Payload) + 64 }
