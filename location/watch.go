package location

import (
	"context"
	"sync"
)

// watchBuffer is the capacity of a Watch channel. Beyond it, pending events
// are coalesced per RID inside the watcher (bounded by the number of RIDs).
const watchBuffer = 16

// watcher coalesces change hints for one Watch call and forwards them to the
// consumer's channel from a single goroutine, so producers (store writers,
// the pub/sub handler, the poller) never block.
type watcher struct {
	mesh string
	out  chan Event
	wake chan struct{} // capacity 1: "pending is not empty"

	mu      sync.Mutex // leaf lock: guards pending and order only
	pending map[string]EventKind
	order   []string // RIDs in pending, first-notified first
}

func newWatcher(mesh string) *watcher {
	return &watcher{
		mesh:    mesh,
		out:     make(chan Event, watchBuffer),
		wake:    make(chan struct{}, 1),
		pending: make(map[string]EventKind),
	}
}

// notify records a hint; a newer hint for the same RID replaces the older
// one. Never blocks.
func (w *watcher) notify(kind EventKind, rid string) {
	w.mu.Lock()
	if _, ok := w.pending[rid]; !ok {
		w.order = append(w.order, rid)
	}
	w.pending[rid] = kind
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) pop() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return Event{}, false
	}
	rid := w.order[0]
	w.order[0] = ""
	w.order = w.order[1:]
	if len(w.order) == 0 {
		w.order = nil // let the backing array go
	}
	kind := w.pending[rid]
	delete(w.pending, rid)
	return Event{Kind: kind, Mesh: w.mesh, RID: rid}, true
}

// forward delivers pending events until ctx ends, then closes out.
func (w *watcher) forward(ctx context.Context) {
	defer close(w.out)
	for {
		ev, ok := w.pop()
		if !ok {
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case w.out <- ev:
		case <-ctx.Done():
			return
		}
	}
}
