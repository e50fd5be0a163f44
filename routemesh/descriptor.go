package routemesh

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/wire"
)

// descriptor is this node's MeshNode descriptor as of now. It runs on the
// mesh actor (the single writer of revision and weights) or before the
// mesh actor starts, so revision and weights are read consistently.
func (n *Node) descriptor() location.Descriptor {
	v := n.load()
	if v == nil { // before the mesh actor's first start
		v = &view{state: NodeStarting, revision: 1, weights: n.initialWeights()}
	}
	cp := make(map[string]uint16, len(v.weights))
	for k, w := range v.weights {
		cp[k] = w
	}
	return location.Descriptor{
		Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen, Revision: v.revision,
		Endpoint: n.endpoint, Servers: cp, ObjectRole: locationRole(n.cfg.ObjectRole),
		PlacementWeight: n.cfg.PlacementWeight, SecurityIdentity: n.trust.SecurityIdentity(),
		Protocol: wire.ProtocolVersion, Draining: v.state == NodeDraining,
		Discovers: n.cfg.Automatic(), Kinds: n.kinds,
	}
}

// hostedKinds collects the kinds the node's extensions host (KindHost),
// sorted and each once: nil on a node that is not an Object Server or has
// no KindHost (its descriptor then does not list kinds), else non-nil.
func (n *Node) hostedKinds() []string {
	if n.cfg.ObjectRole != ObjectServer {
		return nil
	}
	var out []string
	hosts := false
	for _, e := range n.exts {
		if h, ok := e.ext.(KindHost); ok {
			hosts = true
			out = append(out, h.HostedKinds()...)
		}
	}
	if !hosts {
		return nil
	}
	if out == nil {
		out = []string{} // hosts no kind: listed as such
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func locationRole(r ObjectRole) location.ObjectRole {
	switch r {
	case ObjectClient:
		return location.RoleClient
	case ObjectServer:
		return location.RoleServer
	default:
		return location.RoleNone
	}
}

// lease publishes the node's descriptor and keeps its TTL lease alive. One
// goroutine (run) does every store write, so revisions reach the store in
// order; the mesh actor hands it new snapshots through set, which never
// blocks.
//
// Write rules: a new snapshot is written with PutDescriptor at once; every
// TTL/3 the lease is renewed; a renewal that finds the descriptor gone
// (ErrNotFound: expired during an outage, or Redis restarted empty) writes
// the whole descriptor again; any failure (store unreachable) keeps trying
// every TTL/3 with PutDescriptor until one succeeds.
type lease struct {
	n     *Node
	store location.Descriptors
	ttl   time.Duration

	mu     sync.Mutex // leaf: guards latest, dirty, ended and the wg.Add of a new loop
	latest location.Descriptor
	dirty  bool
	ended  bool // end was called: no loop starts again

	kick      chan struct{}  // capacity 1
	published atomic.Bool    // the store is known to hold the current snapshot
	wg        sync.WaitGroup // running loops (one per lease actor incarnation)
}

func newLease(n *Node, store location.Descriptors, d location.Descriptor) *lease {
	return &lease{n: n, store: store, ttl: n.cfg.DescriptorTTL, latest: d,
		kick: make(chan struct{}, 1)}
}

// set replaces the snapshot to publish. Never blocks.
func (le *lease) set(d location.Descriptor) {
	le.mu.Lock()
	le.latest, le.dirty = d, true
	le.mu.Unlock()
	select {
	case le.kick <- struct{}{}:
	default:
	}
}

func (le *lease) take() (location.Descriptor, bool) {
	le.mu.Lock()
	defer le.mu.Unlock()
	d, dirty := le.latest, le.dirty
	le.dirty = false
	return d.Clone(), dirty
}

// op bounds one store call.
func (le *lease) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(le.ttl/3, 50*time.Millisecond))
}

// put writes d and reports success.
func (le *lease) put(ctx context.Context, d location.Descriptor) bool {
	octx, cancel := le.op(ctx)
	defer cancel()
	err := le.store.PutDescriptor(octx, d, le.ttl)
	if err != nil {
		le.n.cnt.descriptorErrors.Add(1)
		if ctx.Err() == nil {
			le.n.log.Warn().Err(err).Uint64("revision", d.Revision).Msg("descriptor publish failed; retrying")
		}
		return false
	}
	le.n.cnt.descriptorPuts.Add(1)
	return true
}

// run publishes until ctx ends. A store that is unreachable does not stop
// it: it keeps trying every TTL/3.
func (le *lease) run(ctx context.Context) {
	published := le.published.Load()
	defer func() { le.published.Store(published) }()
	tick := time.NewTicker(max(le.ttl/3, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-le.kick:
		}
		d, dirty := le.take()
		if dirty || !published {
			published = le.put(ctx, d)
			le.published.Store(published)
			if !published && dirty {
				le.mu.Lock()
				if le.latest.Revision == d.Revision {
					le.dirty = true
				}
				le.mu.Unlock()
			}
			continue
		}
		octx, cancel := le.op(ctx)
		err := le.store.RenewDescriptor(octx, d.Mesh, d.RID, d.Generation, le.ttl)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, location.ErrNotFound):
			// Expired during an outage or the store restarted empty: the
			// whole descriptor goes back at once.
			le.n.log.Info().Msg("descriptor gone from the Location Store; republishing")
			published = le.put(ctx, d)
		default:
			le.n.cnt.descriptorErrors.Add(1)
			published = false
		}
		le.published.Store(published) // Node.Published reads it while the loop runs
	}
}

// begin registers a new loop (one per lease actor incarnation); false once
// end was called.
func (le *lease) begin() bool {
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.ended {
		return false
	}
	le.wg.Add(1)
	return true
}

// end refuses new loops and waits for the running ones (their ctx must be
// cancelled first).
func (le *lease) end() {
	le.mu.Lock()
	le.ended = true
	le.mu.Unlock()
	le.wg.Wait()
}

// remove deletes the descriptor (Stop); every run must have returned.
func (le *lease) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, _ := le.take()
	if err := le.store.DeleteDescriptor(ctx, d.Mesh, d.RID, d.Generation); err != nil && !errors.Is(err, location.ErrNotFound) {
		le.n.log.Warn().Err(err).Msg("descriptor delete failed; it expires with its lease")
	}
}
