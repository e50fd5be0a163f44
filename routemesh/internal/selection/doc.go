// Package selection chooses channel targets. It owns the candidate filter
// (readiness, drain, capacity, then weight > 0) with a reason for every
// candidate it skips, the weighted select-one pick (PickOne), the Logical
// Multicast target set (Multicast), and the per-MeshNode channel target
// table (Table) built from descriptors, handshakes and weight updates.
//
// Usage: the MeshNode actor is the only writer of a Table (Apply, Remove);
// callers on any goroutine take an immutable View with Snapshot, list a
// channel's Servers, join them with their own readiness, drain and capacity
// knowledge into Candidates and call PickOne or Multicast. Selection and
// submit are one operation for the application: the caller path that uses
// this package never hands the chosen RID back to application code.
//
// PickOne and Multicast are pure functions; randomness is an injected
// *rand.Rand. A Table is safe for one writer and any number of concurrent
// readers; a View is immutable and safe to share. The package does no I/O,
// reads no clock and logs nothing. It must not import the wire package, zmq4
// or protoactor, and it does not decide generations: the caller applies only
// what admission accepted.
package selection
