// Package handshake is the pure handshake machine of one peer pipe, on the
// dialer or the listener side: Hello → Welcome → Auth → ready, with the
// duplicate-pipe rule applied before either side declares ready.
//
// Per pair of nodes the one with the smaller RID is the arbiter. Once both
// proofs are verified, the arbiter admits the pipe (the admission machine
// keeps the first pipe that becomes ready and refuses every later one with
// Reject(duplicate)) and declares it ready with a first Batch. The follower
// becomes ready only when that Batch arrives. When the listener is the
// follower, it acknowledges the dialer's Auth with a first Batch of its own
// and stays in the handshake until the arbiter's Batch comes back. So a
// duplicate is always refused before ready and a ready pipe is never torn
// down to resolve one.
//
// It owns: the state of one pipe's handshake, the order of its frames, its
// deadline, and the choice of the moment the admission machine is consulted
// (Check while the handshake runs, Admit when the pipe would become ready).
//
// Usage: the MeshNode actor creates a Machine with New when it dials (then
// steps Dialed once the transport is connected) or when a Hello arrives
// (then steps HelloReceived), turns every handshake frame into an Event,
// and carries out each Output: it builds and sends Output.Send (filling in
// identity, nonces and proofs), closes Output.Replace, makes the pipe ready
// on Output.Ready, closes it on Output.Close, and steps a Tick when
// Output.Deadline passes.
//
// A Machine is not safe for concurrent use: one actor owns it and the
// admission machine it consults. It does no I/O, starts no goroutines, reads
// no clock (time is passed in), draws no random numbers and logs nothing. It
// must not touch the pipe, its socket, the ready-link table or the
// connection intents (the mesh actor's), and it changes the admission
// machine only through Check and Admit (the actor reports closed pipes and
// lost peers). It must not import the wire package, zmq4 or protoactor:
// building frames and verifying proofs is the driver's work; the machine
// sees only their result.
package handshake
