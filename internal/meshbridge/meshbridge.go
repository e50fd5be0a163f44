// Package meshbridge owns the plumbing a routemesh.Node offers only to
// the host (package zlink) and to package spot: failing and respawning a
// node's mesh actor, the mesh actor's tree path, and the node state the
// Spot runtime reads (published, manual topology). It is not part of the
// public API: routemesh fills the hooks in its init with closures over
// unexported methods (the pattern of grpc-go's internal package), so they
// are no exported methods of routemesh.Node. It imports nothing of the
// module and must not: every node argument is a *routemesh.Node.
package meshbridge

// Hooks are routemesh's plumbing, each taking the node (a
// *routemesh.Node) first.
type Hooks struct {
	// Fail moves the node to the terminal Failed state (its supervisor
	// gave up on the mesh actor): every pending and later call ends with
	// ErrNodeFailed, and its descriptor is withdrawn.
	Fail func(node, reason any)
	// Respawn starts a new mesh actor under the parent the node was
	// started with (after the host's own restart stopped the old one).
	Respawn func(node any) error
	// MeshActorPath is the tree path of the node's mesh actor.
	MeshActorPath func(node any) string
	// Published reports whether the node's descriptor has been written
	// to the Location Store at least once and not withdrawn.
	Published func(node any) bool
	// ManualTopology reports whether the node has a manual connection
	// intent (AddPeer) or a fixed RID without automatic discovery.
	ManualTopology func(node any) bool
}

var hooks Hooks

// Register is called once, by routemesh's init.
func Register(h Hooks) { hooks = h }

// Fail is Hooks.Fail.
func Fail(node, reason any) { hooks.Fail(node, reason) }

// Respawn is Hooks.Respawn.
func Respawn(node any) error { return hooks.Respawn(node) }

// MeshActorPath is Hooks.MeshActorPath.
func MeshActorPath(node any) string { return hooks.MeshActorPath(node) }

// Published is Hooks.Published.
func Published(node any) bool { return hooks.Published(node) }

// ManualTopology is Hooks.ManualTopology.
func ManualTopology(node any) bool { return hooks.ManualTopology(node) }
