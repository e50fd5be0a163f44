// Package placement decides which Object Server should own a Spot.
// It is pure: no I/O, no time, no goroutines, no global
// randomness, no logging. Callers pass the current member set and get an
// answer that every node computes identically from the same set.
//
// # Algorithm
//
// Weighted rendezvous hashing (highest random weight). For a Spot
// (kind, id) every eligible member m with placement weight w gets
//
//	score(m) = -w / ln(u),  u = unit(hash64(kind, id, m.RID)) in (0, 1)
//
// and the member with the highest score owns the Spot. Equal scores are
// broken by RID byte order: the lexicographically smaller RID wins. A member
// is eligible when it is Ready, not Draining and has Weight > 0.
//
// Properties (all tested):
//   - Deterministic and independent of the order of the member slice.
//   - Minimal movement: removing a member moves only the Spots it owned
//     (each to its next-ranked member); adding a member moves Spots only to
//     the new member.
//   - Proportional: a member's expected share is its weight over the sum of
//     eligible weights.
//
// # Hash (placement hash v1)
//
// All nodes of a mesh must agree on this function bit for bit; changing any
// step changes owners across the mesh and needs a coordinated rollout.
//
//  1. h = FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
//     over the bytes, in order:
//     len(kind) as 4-byte big-endian, kind,
//     len(id) as 4-byte big-endian, id,
//     len(rid) as 4-byte big-endian, rid.
//  2. h = fmix64(h), the MurmurHash3 64-bit finalizer
//     (h ^= h>>33; h *= 0xff51afd7ed558ccd; h ^= h>>33;
//     h *= 0xc4ceb9fe1a85ec53; h ^= h>>33).
//  3. u = (2*(h>>12) + 1) / 2^53, exactly representable, strictly inside
//     (0, 1).
//
// ln(u) is computed by this package's own portable logarithm (the fdlibm
// algorithm that Go's math.Log uses in pure Go, with every product rounded
// explicitly so the compiler cannot fuse it into an FMA). math.Log itself
// is not used: it is assembly on amd64 and may be fused on arm64, so two
// architectures could disagree in the last bit and, on a near tie, on the
// owner. The remaining operations (division, comparison) are single IEEE 754
// operations and therefore identical everywhere.
//
// # Must not touch
//
// This package knows nothing about the Location Store, ownership records,
// fencing or activation; it only ranks candidates. The caller decides who is
// a member (ready, draining, weight come from MeshNode descriptors) and what
// to do with the answer.
package placement
