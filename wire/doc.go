// Package wire owns the bytes between two ZLink nodes: the Frame that every
// ZMQ message carries (handshake Hello/Welcome/Auth/Reject and Batch), the
// Envelope a Batch carries many of, the numeric error codes that let a
// caller rebuild the sender's sentinel error (the sentinels themselves live
// in internal/zerr, shared with mailbox and actors; wire maps codes to them
// and must not import actors or mailbox), the shared-secret Trust
// profile used by the handshake, and the codec Registry that turns typed
// packets (Packet[Req, Resp]) into msgpack payloads.
//
// Frame and Envelope are encoded by hand (msgpack array form, no
// reflection): AppendFrame appends to a caller-owned buffer so a per-peer
// writer can reuse it, and DecodeFrame never panics and never allocates more
// than O(len(input)); a reader done with one frame before the next decodes
// into memory it keeps (DecodeFrameInto), and may have the heartbeats'
// maps refilled in place (DecodeFrameReusing, Maps). Payloads are opaque
// application msgpack; Packet and
// Registry encode them with github.com/vmihailenco/msgpack/v5 after checking
// their structure with ValidatePayload.
//
// The layout, handshake and limits are described in docs/wire-protocol.md.
//
// wire is pure: it does no I/O, starts no goroutines, reads no clock and
// logs nothing. It must not know about sockets, peers, actors or meshes; the
// handshake state machine, size enforcement against a peer's RecvLimit and
// the ZMTP frame-size guard live with the transport that uses this package.
// Everything here is safe for concurrent use except that a Frame or
// Envelope value must not be mutated while another goroutine encodes it.
package wire
