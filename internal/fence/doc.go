// Package fence is the pure fencing logic of Spot ownership: the owner's
// lease deadline and the claim plan. It decides; it does no I/O, reads no
// clock, starts no goroutines and logs nothing. The Spot runtime drives it
// with its own monotonic clock and the Location Store's answers; the
// deterministic simulation in test/sim drives it with simulated clocks,
// shards and faults.
//
// The rules it implements (docs/spots.md states them for users):
//
//   - R1, a lease is used once: a node creates its lease once per
//     generation and afterwards only renews an existing key of that
//     generation. A refused renewal ends the lease for good (Refused): the
//     node fences every Spot and registers again under a new generation. A
//     claimer that finds an owner's lease gone tombstones that (RID,
//     generation) in the same step, and the store refuses to create or renew
//     a tombstoned lease.
//   - R2, the owner's deadline counts only acknowledged renewals: it is the
//     local monotonic time the last acknowledged renewal was sent, plus
//     TTL·(1−ρ), minus the margin. Replies, outbound calls and state writes
//     each check Valid just before acting. Config.Validate refuses a TTL
//     below 3 × the renewal period + the margin.
//   - R3, claims: read the record from the master; if another owner is
//     recorded and its lease is gone, tombstone it; compare-and-set on
//     owner, generation and epoch (or on "absent"); the new epoch is
//     max(recorded epoch, persisted-state epoch) + 1; activate only if the
//     reply arrives before the claimer's own deadline (Lease.Valid).
//   - R4, release and transfer compare all three fields; epochs never
//     decrease.
//
// It must not touch the store, the network, actors or time.Now.
package fence
