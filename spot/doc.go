// Package spot will own Spots: virtual actors addressed by (kind, ID) and
// never by node. A caller sends to or requests a Spot; the mesh
// places it on one ready, non-draining Object Server, activates it on first
// call, keeps a single activation through the ownership record in the
// Location Store, and relocates it on drain or explicit move.
//
// Not built yet. Placement (which Object Server should own a Spot) lives in
// spot/internal/placement, a pure function of the member set with no I/O.
package spot
