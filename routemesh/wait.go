package routemesh

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
)

// WaitReady waits until channel has a target a call can be placed on: a
// ready Server with weight > 0 that is not draining (this node itself when
// it serves the channel). It returns nil at once when there is one, so the
// first call after it does not end with ErrNoTarget; it returns an error
// matching ErrNoTarget and the context's error when ctx ends first, a
// *ConfigError when the node has no role on channel, and ErrShuttingDown or
// ErrNodeFailed when the node stops or fails while waiting.
//
// It does not poll: it waits for the mesh actor to change the node's view
// or target table (a peer ready or gone, a weight, a drain) and checks
// again each time.
func (n *Node) WaitReady(ctx context.Context, channel string) error {
	return n.waitUntil(ctx, func(v *view) (bool, error) {
		if _, err := n.channelFor(v, channel); err != nil {
			return false, err
		}
		return n.hasTarget(v, channel), nil
	}, func() string { return "no ready Server with weight > 0 on " + channel })
}

// WaitPeers waits until at least count peers are Ready (ready connections
// of this node), bounded by ctx like WaitReady.
func (n *Node) WaitPeers(ctx context.Context, count int) error {
	return n.waitUntil(ctx, func(v *view) (bool, error) {
		if err := v.refusal(n); err != nil {
			return false, err
		}
		return len(v.links) >= count, nil
	}, func() string { return fmt.Sprintf("%d of %d peers ready", len(n.load().links), count) })
}

// waitUntil checks cond on the current view each time the view or the
// target table changes, until it holds, fails, or ctx ends.
func (n *Node) waitUntil(ctx context.Context, cond func(*view) (bool, error), why func() string) error {
	w, release := n.watch()
	defer release()
	for {
		changed := w.changed() // taken before the check: a change after it wakes us
		ok, err := cond(n.load())
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w", zerr.ErrNoTarget, why(), context.Cause(ctx))
		}
	}
}

// hasTarget reports whether a call on channel can be placed now (capacity
// aside: a full Server is load, not readiness).
func (n *Node) hasTarget(v *view, channel string) bool {
	var cbuf [8]selection.Candidate
	var lbuf [8]*link
	cands, _ := n.candidates(v, channel, cbuf[:0], lbuf[:0])
	for _, c := range cands {
		if !c.Ready || c.Weight == 0 || c.Draining {
			continue
		}
		if c.Local && v.owners[channel] == nil {
			continue // the local owner is not up yet
		}
		return true
	}
	return false
}

// readyWatch wakes the waiters of one node when its view or target table
// changes: a channel closed and replaced on every change. It exists only
// while someone waits, so a node nobody waits on pays one atomic load per
// change.
type readyWatch struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiters int // guarded by readyWaits.mu
}

// readyWaits is a node's watch, while someone waits (a leaf: the lock
// guards the waiter count and setting or clearing the watch).
type readyWaits struct {
	mu sync.Mutex
	w  atomic.Pointer[readyWatch]
}

// watch registers a waiter on n and returns its watch and the release.
func (n *Node) watch() (*readyWatch, func()) {
	ws := &n.waits
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.w.Load()
	if w == nil {
		w = &readyWatch{ch: make(chan struct{})}
		ws.w.Store(w)
	}
	w.waiters++
	return w, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if w.waiters--; w.waiters == 0 {
			ws.w.Store(nil)
		}
	}
}

func (w *readyWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// viewChanged wakes whoever waits on n. The mesh actor calls it after it
// changed the view (update) or the target table; peer actors call it when
// a peer's drain flag changes.
func (n *Node) viewChanged() {
	w := n.waits.w.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}
