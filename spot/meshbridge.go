package spot

import (
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/routemesh"
)

// The node state the Spot runtime reads that is no public API of
// routemesh.Node (internal/meshbridge).

// published reports whether n's descriptor has been written to the
// Location Store at least once and not withdrawn.
func published(n *routemesh.Node) bool { return meshbridge.Published(n) }

// manualTopology reports whether n has a manual connection intent
// (AddPeer) or a fixed RID without automatic discovery.
func manualTopology(n *routemesh.Node) bool { return meshbridge.ManualTopology(n) }
