package routemesh

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
)

// MeshView is the mesh as the node's discovery last read it from the
// Location Store: every live descriptor of the mesh, as of Revision. The
// discovery actor is the node's one reader of the mesh's descriptors; an
// extension that needs them (the Spot runtime places Spots on the Object
// Servers it lists) reads this view rather than the store. A MeshView is
// immutable: Descriptors is shared, read it only.
type MeshView struct {
	// Revision is the mesh revision the view is as of (zero before the
	// first read).
	Revision location.MeshRevision
	// Descriptors are the live descriptors of the mesh (this node's own
	// included once published), sorted by RID.
	Descriptors []location.Descriptor
	// Rounds counts the reads of the store discovery has finished (a
	// read of the mesh revision, and of what changed when it moved).
	Rounds uint64
	// served is the last RefreshMeshView ticket a finished round had
	// started after.
	served uint64
}

// MeshView returns the node's current view of the mesh: empty (Rounds 0)
// before discovery's first read, and on a node without discovery (no
// Location Store, or a manual node with object role None).
func (n *Node) MeshView() *MeshView { return n.mview.load() }

// RefreshMeshView asks discovery for a read of the store that starts now
// (or right after the one running) and returns its ticket for
// WaitMeshView.
func (n *Node) RefreshMeshView() uint64 {
	t := n.mview.asks.Add(1)
	n.mview.wantRead.Store(true)
	if p := n.mview.poke.Load(); p != nil {
		(*p)()
	}
	return t
}

// WaitMeshView returns the view once a read of the store that started
// after RefreshMeshView returned ticket has finished; ctx's error if ctx
// ends first, ErrShuttingDown once the node stops (discovery reads no more).
func (n *Node) WaitMeshView(ctx context.Context, ticket uint64) (*MeshView, error) {
	for {
		v, changed := n.mview.current()
		if v.served >= ticket {
			return v, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v, fmt.Errorf("zlink: mesh %s: no fresh read of the mesh: %w", n.cfg.Mesh, ctx.Err())
		case <-n.dctx.Done():
			return v, fmt.Errorf("zlink: mesh %s: no fresh read of the mesh: %w", n.cfg.Mesh, zerr.ErrShuttingDown)
		}
	}
}

// meshViewBox holds the node's MeshView and what discovery and the
// view's readers share: the refresh tickets and the discovery actor's
// poke. A leaf: its lock guards only the view and its change channel.
type meshViewBox struct {
	mu      sync.Mutex // guards v and changed
	v       *MeshView
	changed chan struct{} // closed when v is replaced

	asks     atomic.Uint64          // RefreshMeshView tickets handed out
	wantRead atomic.Bool            // the next round reads what changed, whatever the revision
	poke     atomic.Pointer[func()] // the current discovery incarnation's poke
}

var emptyView = &MeshView{}

func (b *meshViewBox) load() *MeshView {
	v, _ := b.current()
	return v
}

func (b *meshViewBox) current() (*MeshView, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	if b.v == nil {
		return emptyView, b.changed
	}
	return b.v, b.changed
}

// publish replaces the view and wakes its waiters.
func (b *meshViewBox) publish(v *MeshView) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.v != nil && b.v.served > v.served {
		v.served = b.v.served
	}
	b.v = v
	if b.changed != nil {
		close(b.changed)
	}
	b.changed = make(chan struct{})
}
