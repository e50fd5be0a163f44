// Package liveness is the pure heartbeat machine of one ready peer
// connection. It owns two independent staleness signals: a gap counter (+1
// per heartbeat sent, −1 per heartbeat received, floor 0) that catches
// symmetric loss, and the last time anything was heard from the peer, which
// catches asymmetric loss. A one-way loss in which we still receive the
// peer's other frames but none of its heartbeats shows up in the gap;
// hearing nothing at all (even when our own heartbeats cannot be sent) shows
// up as silence. Either past its threshold makes the peer lost, once and for
// good.
//
// Usage: the peer actor creates a Machine with New when the connection
// becomes ready, calls Tick at (or after) the returned Output.Next, sends a
// heartbeat when Output.SendHeartbeat is set and then reports it with
// HeartbeatSent, and reports inbound heartbeats and other frames. When
// Output.Lost is set the actor ends pending requests with ErrPeerLost, takes
// the peer out of target lists and tells admission (PeerLost).
//
// A Machine is not safe for concurrent use: one actor owns it. It reads no
// clock (time is passed in), starts no goroutines, does no I/O and logs
// nothing. It must not import the wire package, zmq4 or protoactor.
package liveness
