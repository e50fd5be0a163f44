// Package sim is the deterministic simulation of Spot ownership fencing:
// seeded, event by event, with store shards that have their own clocks and
// TTLs, nodes whose clocks drift, lost and delayed messages, partitions
// from only some shards, process pauses, crashes, failovers that lose the
// last acknowledged writes and empty store restarts. It drives the real
// fencing logic (spot/internal/fence) and checks its guarantee against the
// simulation's true time:
//
//   - while the store loses no acknowledged write, no activation runs a
//     turn after a newer claim of the same Spot was written (at most one
//     activation runs a turn at any moment);
//   - after a lost write, an overlap is possible: it is counted, and it
//     never lasts longer than TTL + margin;
//   - epochs of one Spot strictly increase while no write is lost;
//   - every call ends exactly once.
//
// The tests run fixed seeds; `go test ./test/sim -seeds N` runs N more,
// and every failure prints its seed. A self-check runs the fixed seeds with
// margin 0, where the harness must find a violation.
package sim
