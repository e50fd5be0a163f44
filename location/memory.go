package location

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// DefaultPollInterval is how often Watch re-reads the store to detect
// expired leases and recover lost pushes.
const DefaultPollInterval = time.Second

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// WithClock injects the clock used for TTL leases (default time.Now). Tests
// pass a fake clock and advance it to expire leases deterministically.
func WithClock(now func() time.Time) MemoryOption {
	return func(m *Memory) { m.now = now }
}

// WithPollInterval sets how often a Watch sweeps for expired leases
// (default DefaultPollInterval). Expiry has no other event source.
func WithPollInterval(d time.Duration) MemoryOption {
	return func(m *Memory) { m.poll = d }
}

// Memory is the embedded in-memory Location Store. It serves several
// MeshNodes inside ONE process and is never shared with another process.
// Safe for concurrent use.
type Memory struct {
	now  func() time.Time
	poll time.Duration

	ctx    context.Context // ended by Close; parent of every Watch
	cancel context.CancelFunc
	wg     sync.WaitGroup // Watch goroutines

	mu       sync.Mutex // guards everything below; taken before watcher.mu
	closed   bool
	nodes    map[string]map[string]memNode // mesh → RID
	logs     map[string]*memLog            // mesh → its change log
	epoch    string                        // the change logs' epoch (one per store)
	pubs     map[string]map[string]memPub  // channel → RID
	spots    map[spotKey]Ownership         // OwnerRID "" marks a released record that keeps its epoch
	leases   expiring[SpotLease]           // Spot leases
	tombs    expiring[SpotLease]           // tombstones of Spot leases
	states   map[spotKey]SpotState         // persisted Spot state
	rems     memReminders                  // Spot reminders and their due-time index
	inc      string                        // incarnation: changed by RestartEmpty
	incN     int
	watchers map[string]map[*watcher]struct{}
}

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

type memPub struct {
	p       Publisher
	expires time.Time
}

type spotKey struct{ mesh, kind, id string }

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{
		now:      time.Now,
		poll:     DefaultPollInterval,
		nodes:    make(map[string]map[string]memNode),
		logs:     make(map[string]*memLog),
		epoch:    "memory-" + newEpoch(),
		pubs:     make(map[string]map[string]memPub),
		spots:    make(map[spotKey]Ownership),
		leases:   newExpiring[SpotLease](),
		tombs:    newExpiring[SpotLease](),
		inc:      "memory-0",
		watchers: make(map[string]map[*watcher]struct{}),
	}
	for _, o := range opts {
		o(m)
	}
	if m.poll <= 0 {
		m.poll = DefaultPollInterval
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// lock takes m.mu and fails with ErrClosed after Close, or with ctx's error.
func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
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

// PutDescriptor implements Store.
func (m *Memory) PutDescriptor(ctx context.Context, d Descriptor, ttl time.Duration) error {
	if err := d.validate(); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
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

// RenewDescriptor implements Store.
func (m *Memory) RenewDescriptor(ctx context.Context, mesh, rid string, gen uint64, ttl time.Duration) error {
	if err := validMesh(mesh); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
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

// DeleteDescriptor implements Store.
func (m *Memory) DeleteDescriptor(ctx context.Context, mesh, rid string, gen uint64) error {
	if err := validMesh(mesh); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	n, ok := m.liveNodeLocked(mesh, rid, m.now())
	if !ok || n.d.Generation != gen {
		return fmt.Errorf("%w: descriptor %s/%s generation %d", ErrNotFound, mesh, rid, gen)
	}
	m.deleteNodeLocked(mesh, rid)
	return nil
}

// ListDescriptors implements Store.
func (m *Memory) ListDescriptors(ctx context.Context, mesh string) ([]Descriptor, error) {
	if err := validMesh(mesh); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	m.sweepLocked(mesh, m.now())
	out := make([]Descriptor, 0, len(m.nodes[mesh]))
	for _, n := range m.nodes[mesh] {
		out = append(out, n.d.Clone())
	}
	slices.SortFunc(out, func(a, b Descriptor) int { return cmp.Compare(a.RID, b.RID) })
	return out, nil
}

// GetDescriptor implements Store.
func (m *Memory) GetDescriptor(ctx context.Context, mesh, rid string) (Descriptor, error) {
	if err := validMesh(mesh); err != nil {
		return Descriptor{}, err
	}
	if err := m.lock(ctx); err != nil {
		return Descriptor{}, err
	}
	defer m.mu.Unlock()
	n, ok := m.liveNodeLocked(mesh, rid, m.now())
	if !ok {
		return Descriptor{}, fmt.Errorf("%w: descriptor %s/%s", ErrNotFound, mesh, rid)
	}
	return n.d.Clone(), nil
}

// DescriptorRevision implements Store (after sweeping lapsed leases).
func (m *Memory) DescriptorRevision(ctx context.Context, mesh string) (MeshRevision, error) {
	if err := validMesh(mesh); err != nil {
		return MeshRevision{}, err
	}
	if err := m.lock(ctx); err != nil {
		return MeshRevision{}, err
	}
	defer m.mu.Unlock()
	m.sweepLocked(mesh, m.now())
	return m.revisionLocked(mesh), nil
}

// DescriptorChanges implements Store (after sweeping lapsed leases).
func (m *Memory) DescriptorChanges(ctx context.Context, mesh string, since MeshRevision) (DescriptorChanges, error) {
	if err := validMesh(mesh); err != nil {
		return DescriptorChanges{}, err
	}
	if err := m.lock(ctx); err != nil {
		return DescriptorChanges{}, err
	}
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

// ExpireDescriptors implements Store: a sweep of the mesh (in memory, no
// I/O).
func (m *Memory) ExpireDescriptors(ctx context.Context, mesh string) (removed, live int, err error) {
	if err := validMesh(mesh); err != nil {
		return 0, 0, err
	}
	if err := m.lock(ctx); err != nil {
		return 0, 0, err
	}
	defer m.mu.Unlock()
	before := len(m.nodes[mesh])
	m.sweepLocked(mesh, m.now())
	live = len(m.nodes[mesh])
	return before - live, live, nil
}

// Watch implements Store. Expired leases are announced by a sweep every
// poll interval.
func (m *Memory) Watch(ctx context.Context, mesh string) (<-chan Event, error) {
	if err := validMesh(mesh); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
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
				if !m.closed {
					m.sweepLocked(mesh, m.now())
				}
				m.mu.Unlock()
			}
		}
	}()
	return w.out, nil
}

// PutPublisher implements Store.
func (m *Memory) PutPublisher(ctx context.Context, p Publisher, ttl time.Duration) error {
	if err := p.validate(); err != nil {
		return err
	}
	if err := validTTL(ttl); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.pubs[p.Channel] == nil {
		m.pubs[p.Channel] = make(map[string]memPub)
	}
	m.pubs[p.Channel][p.RID] = memPub{p: p, expires: m.now().Add(ttl)}
	return nil
}

// ListPublishers implements Store.
func (m *Memory) ListPublishers(ctx context.Context, channel string) ([]Publisher, error) {
	if err := validChannel(channel); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.now()
	out := make([]Publisher, 0, len(m.pubs[channel]))
	for rid, e := range m.pubs[channel] {
		if !now.Before(e.expires) {
			delete(m.pubs[channel], rid)
			continue
		}
		out = append(out, e.p)
	}
	if len(m.pubs[channel]) == 0 {
		delete(m.pubs, channel)
	}
	slices.SortFunc(out, func(a, b Publisher) int { return cmp.Compare(a.RID, b.RID) })
	return out, nil
}

// DeletePublisher implements Store.
func (m *Memory) DeletePublisher(ctx context.Context, channel, rid string, gen uint64) error {
	if err := validChannel(channel); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	e, ok := m.pubs[channel][rid]
	if !ok || !m.now().Before(e.expires) || e.p.Generation != gen {
		return fmt.Errorf("%w: publisher %s/%s generation %d", ErrNotFound, channel, rid, gen)
	}
	delete(m.pubs[channel], rid)
	if len(m.pubs[channel]) == 0 {
		delete(m.pubs, channel)
	}
	return nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}

func descriptorEqual(a, b Descriptor) bool {
	return a.Mesh == b.Mesh && a.RID == b.RID && a.Generation == b.Generation &&
		a.Revision == b.Revision && a.Endpoint == b.Endpoint && maps.Equal(a.Servers, b.Servers) &&
		a.ObjectRole == b.ObjectRole && a.PlacementWeight == b.PlacementWeight &&
		a.SecurityIdentity == b.SecurityIdentity && a.Protocol == b.Protocol && a.Draining == b.Draining &&
		a.Discovers == b.Discovers && (a.Kinds == nil) == (b.Kinds == nil) && slices.Equal(a.Kinds, b.Kinds)
}
