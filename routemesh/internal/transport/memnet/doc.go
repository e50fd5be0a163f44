// Package memnet is the in-memory twin of the routemesh transport: a
// Network of named hosts whose listeners and dialed connections implement
// transport.Transport, with faults a test controls per direction (from one
// host to another): cut, drop, delay, hold back behind the next frame
// (reorder), and a filter that decides frame by frame. Random faults draw
// from one stream per direction, seeded by New and the two host names, so
// a seed reproduces the same decisions for the same frames sent in that
// direction (one pipe's frames come from one writer, in order). A test
// that needs one exact fault picks its frame with a filter (direction,
// sequence number, frame content) and does not depend on scheduling.
//
// Usage (routemesh's own tests): net := memnet.New(seed); give each node
// net.Host("a"), net.Host("b"), …; then net.Cut("b", "a") (one direction),
// net.Partition("a", "b"), net.Heal("a", "b"), net.Break("a", "b") (close
// every connection between them), net.SetFaults or net.SetFilter.
//
// Semantics follow the zmq4 transport where routemesh depends on them:
// Listener.Send to an unknown identity is dropped silently; a dialed
// connection whose listener closed or was broken returns io.EOF from Recv;
// the listener reports OnClosed when a dialed connection closes; a second
// dial with a live identity is refused. Frames are copied on Send, so the
// caller may reuse its buffer. A dial across a cut fails at once (instead
// of waiting for a connect timeout).
//
// Every type is safe for concurrent use. Nothing here blocks except Recv
// (until a frame, or close). It must not be used outside tests, and it
// must not decode frames (the filter gets them raw).
package memnet
