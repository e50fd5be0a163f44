// Package benchrun holds the side-by-side benchmarks that `zlink-node bench`
// and `make bench` print: each compares a ZLink path with the baseline an
// issue names, in the same run, on the same machine. It also holds the
// runs that compare nothing: the soak and the fault scenarios (`bench
// faults`, on the harness of test/fault, with its Servers to kill in child
// processes of the same binary).
//
// It owns no runtime behaviour; it drives the public APIs of actors/,
// routemesh/ and location/, and builds its raw baselines (a protoactor-go
// ActorSystem of its own, zmq4 sockets) itself. It must not reach into the
// internals of the packages it measures, and nothing outside cmd/node may
// import it.
package benchrun
