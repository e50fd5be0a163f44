// Package transport is the narrow interface a MeshNode moves frames
// through, and its production implementation on go-zeromq/zmq4 with every
// connection guarded by internal/zguard.
//
// What it owns: binding one listening endpoint (a ROUTER) that receives
// (pipe identity, frame) pairs and sends to a pipe identity, dialing one
// outbound pipe (a DEALER of its own with a given identity), and reporting
// closed inbound connections and connections refused at the TLS layer
// (ZMQConfig.OnTLSRefused; TLS itself is zguard's, set in Guard.TLS). A frame is an opaque byte slice: the wire
// format, handshakes, liveness, batching and reconnects belong to
// routemesh, not here.
//
// The in-memory twin in transport/memnet implements the same interface for
// protocol tests (drop, delay, reorder, cut one direction, seeded). The
// integration and contract tests keep real ZeroMQ sockets.
//
// It must not touch: the wire format (it never decodes a frame), actors,
// clocks beyond the socket deadlines zguard applies, and the state of the
// node that uses it.
package transport
