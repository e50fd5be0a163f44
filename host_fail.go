package zlink

import (
	"sync"

	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/routemesh"
)

// failWatch maps mesh actor paths to their nodes, so the host's supervisor
// can fail the right node when it gives up on its mesh actor. A leaf: the
// mutex guards only the map (Start adds while the host actor may read).
type failWatch struct {
	mu     sync.Mutex
	byPath map[string]*routemesh.Node
	early  map[string]any // give-ups before the node was registered
}

func (w *failWatch) watch(n *routemesh.Node) {
	path := meshbridge.MeshActorPath(n)
	w.mu.Lock()
	if w.byPath == nil {
		w.byPath = map[string]*routemesh.Node{}
	}
	w.byPath[path] = n
	reason, early := w.early[path]
	delete(w.early, path)
	w.mu.Unlock()
	if early {
		meshbridge.Fail(n, reason)
	}
}

// fail is the host supervisor's OnGiveUp: it runs on the host actor and
// never blocks.
func (w *failWatch) fail(path string, reason any) {
	w.mu.Lock()
	n := w.byPath[path]
	if n == nil {
		if w.early == nil {
			w.early = map[string]any{}
		}
		w.early[path] = reason
	}
	w.mu.Unlock()
	if n != nil {
		meshbridge.Fail(n, reason)
	}
}
