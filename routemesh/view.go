package routemesh

import (
	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
)

// view is the node's state as the call path reads it: one immutable value
// behind one atomic pointer (Node.v). The mesh actor is its only writer
// while it runs (update); the terminal transitions after the mesh actor
// has ended (Stopped by Stop, Failed by the host's give-up) go through the
// same compare-and-swap, so no transition is ever lost or undone.
type view struct {
	state    NodeState
	revision uint64            // descriptor revision: +1 per weight change or drain
	weights  map[string]uint16 // this node's Server weights
	links    map[string]*link  // ready peers by RID
	direct   *actors.Ref       // Node-direct owner; nil while (re)starting
	owners   map[string]*actors.Ref
	paused   bool  // admission paused: too many hung handlers
	hung     int64 // hung handlers at the last sweep
}

// load returns the current view: nil until the mesh actor's first start
// publishes one (the beat loop can run before that), never nil after
// Start returned.
func (n *Node) load() *view { return n.v.Load() }

// update applies edit to a copy of the current view and publishes it. A
// terminal state is never left, except Failed → Stopped. Maps in the view
// are never modified in place: edit replaces them.
func (n *Node) update(edit func(*view)) *view {
	for {
		cur := n.v.Load()
		next := *cur
		edit(&next)
		switch cur.state {
		case NodeStopped:
			next.state = NodeStopped
		case NodeFailed:
			if next.state != NodeStopped {
				next.state = NodeFailed
			}
		}
		if n.v.CompareAndSwap(cur, &next) {
			n.viewChanged() // wakes WaitReady/WaitPeers (wait.go)
			return &next
		}
	}
}

// setState moves the node to s (see update for the terminal rules).
func (n *Node) setState(s NodeState) { n.update(func(v *view) { v.state = s }) }

// withLink returns a copy of links with rid set to l (l == nil deletes).
func withLink(links map[string]*link, rid string, l *link) map[string]*link {
	next := make(map[string]*link, len(links)+1)
	for k, v := range links {
		next[k] = v
	}
	if l == nil {
		delete(next, rid)
	} else {
		next[rid] = l
	}
	return next
}

// refusal is the error every new call gets in this view's state: nil while
// the node takes calls; ErrNodeFailed when Failed; ErrShuttingDown while
// stopping or stopped.
func (v *view) refusal(n *Node) error {
	switch v.state {
	case NodeFailed:
		return n.failure()
	case NodeStopping, NodeStopped:
		return zerr.ErrShuttingDown
	}
	return nil
}
