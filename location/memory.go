package location

import (
	"context"
	"sync"
	"sync/atomic"
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
	validated // the Store's methods: validation, then the methods below

	now  func() time.Time
	poll time.Duration

	ctx    context.Context // ended by Close; parent of every Watch
	cancel context.CancelFunc
	wg     sync.WaitGroup // Watch goroutines

	closed atomic.Bool // set under mu by Close

	mu       sync.Mutex                    // guards everything below; taken before watcher.mu
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
	m.validated = validated{b: m}
	return m
}

func (m *Memory) closedNow() bool { return m.closed.Load() }

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed.Store(true)
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}
