// Package pasupervisor owns how a supervisor.Config acts on protoactor-go:
// the actor.SupervisorStrategy that decides restart, escalation or stop
// for a failing child (restart intensity, backoff, one-for-one or
// all-for-one, ErrUnrecoverable) and records every failure, restart and
// state in the supervisor.Registry, plus PathOf, a PID's registry path.
//
// It is internal so that the public supervisor package names no
// protoactor type; the actors package is its only user. It must not spawn
// actors, send user messages or know about the wire, meshes or Spots.
package pasupervisor
