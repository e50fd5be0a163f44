package routemesh

import (
	"fmt"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/supervisor"
)

// meshSpec is the mesh actor.
func (n *Node) meshSpec() actors.Spec {
	return actors.Spec{
		Name: "mesh:" + n.cfg.Mesh, Kind: "meshnode",
		MaxMessages: meshMailboxMessages, MaxBytes: meshMailboxBytes,
		Supervisor: supervisor.DefaultConfig(),
		Producer:   func() actors.Actor { return newMeshActor(n) },
	}
}

// respawn starts a new mesh actor for the node under the parent it was
// started with (the host, after its own restart stopped the old one); the
// new actor rebuilds the node from its configuration and last view. A
// stopped or failed node is not respawned. It waits for the parent to
// spawn it, so the parent must not call it from inside its own Receive.
func (n *Node) respawn() error {
	switch n.State() {
	case NodeStopping, NodeStopped, NodeFailed:
		return nil
	}
	spec := n.meshSpec()
	spec.Parent = n.parent
	_, err := n.sys.Spawn(spec)
	return err
}

// failure is why the node failed, or ErrNodeFailed.
func (n *Node) failure() error {
	if e := n.failErr.Load(); e != nil {
		return *e
	}
	return ErrNodeFailed
}

// fail moves the node to the terminal Failed state: its supervisor gave up
// on the mesh actor (restarts past the intensity limit). Every pending
// call ends at once with ErrNodeFailed, every later call too; the tree,
// status and health show it. Stop still releases the node's resources.
// The host calls it (through internal/meshbridge) from its supervisor's
// OnGiveUp.
func (n *Node) fail(reason any) {
	err := fmt.Errorf("%w: %v", ErrNodeFailed, reason)
	if !n.failErr.CompareAndSwap(nil, &err) {
		return
	}
	if n.State() == NodeStopped {
		return
	}
	n.setState(NodeFailed)
	n.calls.failAll(err)
	n.hcancel()
	// Its peers must stop choosing it at once: withdraw the descriptor
	// (off this goroutine: the caller is a supervisor and must not block).
	if n.lease != nil {
		n.goTracked(func() {
			n.dcancel()
			n.lease.end()
			n.lease.remove()
		})
	}
	n.log.Error().Interface("reason", reason).Msg("meshnode failed: its actors could not be recovered")
}

// meshActorPath is the tree path of the node's mesh actor, for the host
// that supervises it.
func (n *Node) meshActorPath() string { return n.mesh().Path() }

// The host's and package spot's plumbing, reached through
// internal/meshbridge rather than as exported methods of Node.
func init() {
	meshbridge.Register(meshbridge.Hooks{
		Fail:           func(n, reason any) { n.(*Node).fail(reason) },
		Respawn:        func(n any) error { return n.(*Node).respawn() },
		MeshActorPath:  func(n any) string { return n.(*Node).meshActorPath() },
		Published:      func(n any) bool { return n.(*Node).published() },
		ManualTopology: func(n any) bool { return n.(*Node).manualTopology() },
	})
}
