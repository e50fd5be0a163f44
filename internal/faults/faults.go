// Package faults owns the fault-injection hook of a running Host, for the
// chaos tests and the benchmarks' crash drills: it is not part of the
// public API. The root package registers the hook when it is loaded; this
// package must not touch anything else.
package faults

import "errors"

var injectPanic func(host any, path, reason string) error

// SetInjectPanic is called once by the root package.
func SetInjectPanic(f func(host any, path, reason string) error) { injectPanic = f }

// InjectPanic makes the actor at path (a tree path such as
// "/host/mesh:game/direct") of host (a *zlink.Host) panic on its next
// turn, as if its own code had panicked: its supervisor restarts it, the
// tree records the failure, and the node must come back whole (or fail
// visibly past the restart intensity).
func InjectPanic(host any, path, reason string) error {
	if injectPanic == nil {
		return errors.New("faults: no host hook (package zlink is not loaded)")
	}
	return injectPanic(host, path, reason)
}
