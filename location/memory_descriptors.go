package location

// The in-memory store's MeshNode descriptors: leases, the change log of
// every mesh, watches.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

type memNode struct {
	d       Descriptor
	expires time.Time
}

// memLog is a mesh's change log: the revision, the last change of every
// live RID and the newest goneKeep removals.
type memLog struct {
	seq, floor uint64
	changed    map[string]uint64 // live RID → seq of its last change
	gone       map[string]uint64 // removed RID → seq of its removal
}

func (m *Memory) emitLocked(mesh string, kind EventKind, rid string) {
	for w := range m.watchers[mesh] {
		w.notify(kind, rid)
	}
}

// liveNodeLocked returns the live descriptor entry, removing (and announcing)
// an expired one.
func (m *Memory) liveNodeLocked(mesh, rid string, now time.Time) (memNode, bool) {
	n, ok := m.nodes[mesh][rid]
	if !ok {
		return memNode{}, false
	}
	if !now.Before(n.expires) {
		m.deleteNodeLocked(mesh, rid)
		return memNode{}, false
	}
	return n, true
}

func (m *Memory) deleteNodeLocked(mesh, rid string) {
	delete(m.nodes[mesh], rid)
	if len(m.nodes[mesh]) == 0 {
		delete(m.nodes, mesh)
	}
	lg := m.logLocked(mesh)
	lg.seq++
	delete(lg.changed, rid)
	lg.gone[rid] = lg.seq
	if len(lg.gone) > goneKeep {
		oldest, at := "", uint64(0)
		for r, seq := range lg.gone {
			if oldest == "" || seq < at {
				oldest, at = r, seq
			}
		}
		delete(lg.gone, oldest)
		lg.floor = max(lg.floor, at)
	}
	m.emitLocked(mesh, EventDelete, rid)
}

// changedLocked logs that rid appeared or changed.
func (m *Memory) changedLocked(mesh, rid string) {
	lg := m.logLocked(mesh)
	lg.seq++
	lg.changed[rid] = lg.seq
	delete(lg.gone, rid)
	m.emitLocked(mesh, EventPut, rid)
}

func (m *Memory) logLocked(mesh string) *memLog {
	lg := m.logs[mesh]
	if lg == nil {
		lg = &memLog{changed: map[string]uint64{}, gone: map[string]uint64{}}
		m.logs[mesh] = lg
	}
	return lg
}

func (m *Memory) revisionLocked(mesh string) MeshRevision {
	rev := MeshRevision{Epoch: m.epoch}
	if lg := m.logs[mesh]; lg != nil {
		rev.Seq = lg.seq
	}
	return rev
}

func (m *Memory) sweepLocked(mesh string, now time.Time) {
	for rid := range m.nodes[mesh] {
		m.liveNodeLocked(mesh, rid, now)
	}
}

// putDescriptor is Store.PutDescriptor behind validated.
func (m *Memory) putDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	old, ok := m.liveNodeLocked(d.Mesh, d.RID, now)
	if ok && old.d.Generation == d.Generation && d.Revision < old.d.Revision {
		return fmt.Errorf("%w: descriptor %s/%s revision %d below stored %d", ErrFenced, d.Mesh, d.RID, d.Revision, old.d.Revision)
	}
	if m.nodes[d.Mesh] == nil {
		m.nodes[d.Mesh] = make(map[string]memNode)
	}
	d = d.Clone()
	m.nodes[d.Mesh][d.RID] = memNode{d: d, expires: now.Add(ttl)}
	if !ok || !descriptorEqual(old.d, d) {
		m.changedLocked(d.Mesh, d.RID)
	}
	return nil
}

// renewDescriptor is Store.RenewDescriptor behind validated.
func (m *Memory) renewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	n, ok := m.liveNodeLocked(mesh, rid, now)
	if !ok || n.d.Generation != gen {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	n.expires = now.Add(ttl)
	m.nodes[mesh][rid] = n
	return nil
}

// deleteDescriptor is Store.DeleteDescriptor behind validated.
func (m *Memory) deleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.liveNodeLocked(mesh, rid, m.now())
	if !ok || n.d.Generation != gen {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	m.deleteNodeLocked(mesh, rid)
	return nil
}

// listDescriptors is Store.ListDescriptors behind validated.
func (m *Memory) listDescriptors(ctx context.Context, mesh string) ([]Descriptor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(mesh, m.now())
	out := make([]Descriptor, 0, len(m.nodes[mesh]))
	for _, n := range m.nodes[mesh] {
		out = append(out, n.d.Clone())
	}
	slices.SortFunc(out, func(a, b Descriptor) int { return cmp.Compare(a.RID, b.RID) })
	return out, nil
}

// getDescriptor is Store.GetDescriptor behind validated.
func (m *Memory) getDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.liveNodeLocked(mesh, rid, m.now())
	if !ok {
		return Descriptor{}, fmt.Errorf("%w: descriptor %s/%s", ErrNotFound, mesh, rid)
	}
	return n.d.Clone(), nil
}

// descriptorRevision is Store.DescriptorRevision behind validated (after
// sweeping lapsed leases).
func (m *Memory) descriptorRevision(ctx context.Context, mesh string) (MeshRevision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(mesh, m.now())
	return m.revisionLocked(mesh), nil
}

// descriptorChanges is Store.DescriptorChanges behind validated (after
// sweeping lapsed leases).
func (m *Memory) descriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(mesh, m.now())
	out := DescriptorChanges{Revision: m.revisionLocked(mesh)}
	lg := m.logs[mesh]
	var floor uint64
	if lg != nil {
		floor = lg.floor
	}
	out.Full = since.Epoch != out.Revision.Epoch || since.Seq > out.Revision.Seq || since.Seq < floor
	for rid, n := range m.nodes[mesh] {
		if out.Full || (lg != nil && lg.changed[rid] > since.Seq) {
			out.Put = append(out.Put, n.d.Clone())
		}
	}
	if !out.Full && lg != nil {
		for rid, seq := range lg.gone {
			if seq > since.Seq {
				out.Gone = append(out.Gone, rid)
			}
		}
	}
	slices.SortFunc(out.Put, func(a, b Descriptor) int { return cmp.Compare(a.RID, b.RID) })
	slices.Sort(out.Gone)
	return out, nil
}

// expireDescriptors is Store.ExpireDescriptors behind validated: a sweep of
// the mesh (in memory, no I/O).
func (m *Memory) expireDescriptors(ctx context.Context, mesh string) (removed, live int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := len(m.nodes[mesh])
	m.sweepLocked(mesh, m.now())
	live = len(m.nodes[mesh])
	return before - live, live, nil
}

// watch is Store.Watch behind validated. Expired leases are announced by a
// sweep every poll interval.
func (m *Memory) watch(ctx context.Context, mesh string) (<-chan Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() { // Close ran since validated looked: no goroutine after its wait
		return nil, ErrClosed
	}
	w := newWatcher(mesh)
	if m.watchers[mesh] == nil {
		m.watchers[mesh] = make(map[*watcher]struct{})
	}
	m.watchers[mesh][w] = struct{}{}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(m.ctx, cancel)
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		w.forward(wctx)
	}()
	go func() {
		defer m.wg.Done()
		defer stop()
		defer cancel()
		t := time.NewTicker(m.poll)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				m.mu.Lock()
				delete(m.watchers[mesh], w)
				if len(m.watchers[mesh]) == 0 {
					delete(m.watchers, mesh)
				}
				m.mu.Unlock()
				return
			case <-t.C:
				m.mu.Lock()
				if !m.closed.Load() {
					m.sweepLocked(mesh, m.now())
				}
				m.mu.Unlock()
			}
		}
	}()
	return w.out, nil
}

func descriptorEqual(a, b Descriptor) bool {
	return a.Mesh == b.Mesh && a.RID == b.RID && a.Generation == b.Generation &&
		a.Revision == b.Revision && a.Endpoint == b.Endpoint && maps.Equal(a.Servers, b.Servers) &&
		a.ObjectRole == b.ObjectRole && a.PlacementWeight == b.PlacementWeight &&
		a.SecurityIdentity == b.SecurityIdentity && a.Protocol == b.Protocol && a.Draining == b.Draining &&
		a.Discovers == b.Discovers && (a.Kinds == nil) == (b.Kinds == nil) && slices.Equal(a.Kinds, b.Kinds)
}
