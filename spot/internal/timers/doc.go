// Package timers is the pure timer schedule of one node's Spots: every
// timer of every active Spot in one heap, so a node runs one clock, not a
// Go timer per Spot.
//
// A timer is named by a Key (the activation's node-unique sequence and the
// timer's name). Set schedules it once (period 0) or repeating; setting a
// name again replaces the timer (a new generation: a firing of the old one
// still in flight is recognised as stale by its generation). Tick(now)
// returns the timers due at now and when to tick next.
//
// Repeating timers are fixed-rate: a timer set at t with period p is due
// at t+d, t+d+p, t+d+2p, … whatever a firing's turn costs. Tick puts a
// repeating timer back at its next due time on its grid as it fires it; a
// clock that stalled past several due times fires it once and reports the
// periods it merged (Firing.Merged). Merging a firing whose last one is
// still waiting for its turn is the driver's (a flag in the firing's Tag,
// so a repeating timer's turn takes no lock). A one-shot timer fires once
// and waits to be taken (Taken forgets it); Retry schedules a firing the
// driver could not deliver (a full mailbox) again.
//
// Properties, each tested in machine_test.go against a naive oracle: every
// timer fires at most once per due time and never before it; a repeating
// timer's due times stay on its grid, each fired or merged once; a
// cancelled or replaced timer never fires again (its generation is gone);
// Tick's next time is the earliest due time of a timer that can fire.
//
// A Machine is not safe for concurrent use (its driver guards it with a
// mutex of its own). It reads no clock, starts no goroutines, does no I/O.
package timers
