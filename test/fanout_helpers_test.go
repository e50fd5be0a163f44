package test

// Helpers of the classic fanout contract tests (contract_fanout_test.go).

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// fanoutHeartbeat and fanoutTimeout keep publishers heard well inside the
// receive timeout while a stopped publisher times out quickly.
const (
	fanoutHeartbeat = 20 * time.Millisecond
	fanoutTimeout   = 400 * time.Millisecond
	fanoutPoll      = 20 * time.Millisecond
)

// fanoutStoreKinds are the Location Stores automatic fanout is tested with.
var fanoutStoreKinds = []string{"memory", "redis"}

// newFanoutStore returns a store of kind, closed at cleanup. "redis" starts
// a real redis-server on a free port.
func newFanoutStore(t *testing.T, kind string) location.Store {
	t.Helper()
	var s location.Store
	switch kind {
	case "memory":
		s = location.NewMemory()
	case "redis":
		srv := locationtest.StartRedis(t)
		cfg, err := location.ParseRedisURL(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		r, err := location.NewRedis(ctxT(t, 5*time.Second), cfg)
		if err != nil {
			t.Fatalf("NewRedis: %v", err)
		}
		s = r
	default:
		t.Fatalf("unknown store kind %q", kind)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// spyStore counts every read of the Location Store.
type spyStore struct {
	location.Store
	listPublishers, meshReads atomic.Int64
}

func (s *spyStore) ListPublishers(ctx context.Context, channel string) ([]location.Publisher, error) {
	s.listPublishers.Add(1)
	return s.Store.ListPublishers(ctx, channel)
}

func (s *spyStore) ListDescriptors(ctx context.Context, mesh string) ([]location.Descriptor, error) {
	s.meshReads.Add(1)
	return s.Store.ListDescriptors(ctx, mesh)
}

func (s *spyStore) GetDescriptor(ctx context.Context, mesh, rid string) (location.Descriptor, error) {
	s.meshReads.Add(1)
	return s.Store.GetDescriptor(ctx, mesh, rid)
}

func (s *spyStore) DescriptorRevision(ctx context.Context, mesh string) (location.MeshRevision, error) {
	s.meshReads.Add(1)
	return s.Store.DescriptorRevision(ctx, mesh)
}

func (s *spyStore) DescriptorChanges(ctx context.Context, mesh string, since location.MeshRevision) (location.DescriptorChanges, error) {
	s.meshReads.Add(1)
	return s.Store.DescriptorChanges(ctx, mesh, since)
}

func (s *spyStore) Watch(ctx context.Context, mesh string) (<-chan location.Event, error) {
	s.meshReads.Add(1)
	return s.Store.Watch(ctx, mesh)
}

// startFanoutPub starts a publisher (automatic when store is non-nil),
// closed at cleanup.
func startFanoutPub(t *testing.T, channel string, store location.Store) *fanout.Publisher {
	t.Helper()
	p, err := fanout.StartPublisher(ctxT(t, 5*time.Second), fanout.PublisherConfig{
		Channel: channel, Store: store, TTL: time.Minute,
		HeartbeatInterval: fanoutHeartbeat, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("StartPublisher %s: %v", channel, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("publisher Close: %v", err)
		}
	})
	return p
}

// inbox records delivered messages per publisher.
type inbox struct {
	mu   sync.Mutex
	msgs []fanout.Message
}

func (b *inbox) handle(m fanout.Message) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
}

// from counts the messages of publisher (RID or endpoint).
func (b *inbox) from(publisher string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, m := range b.msgs {
		if m.Publisher == publisher {
			n++
		}
	}
	return n
}

// startFanoutSub starts a subscriber delivering into box, closed at cleanup.
func startFanoutSub(t *testing.T, cfg fanout.SubscriberConfig, box *inbox) *fanout.Subscriber {
	t.Helper()
	cfg.ReceiveTimeout = fanoutTimeout
	cfg.PollInterval = fanoutPoll
	cfg.Logger = testLogger(t)
	if box != nil {
		cfg.Handler = box.handle
	}
	s, err := fanout.StartSubscriber(ctxT(t, 5*time.Second), cfg)
	if err != nil {
		t.Fatalf("StartSubscriber: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("subscriber Close: %v", err)
		}
	})
	return s
}

// pubKey is the Status key of an automatic publisher.
func pubKey(p *fanout.Publisher) string {
	return p.RID() + "/" + strconv.FormatUint(p.Generation(), 10)
}

// fanoutEntry returns the Status entry key of s.
func fanoutEntry(s *fanout.Subscriber, key string) (fanout.PublisherStatus, bool) {
	for _, st := range s.Status() {
		if st.Key == key {
			return st, true
		}
	}
	return fanout.PublisherStatus{}, false
}

// waitFanoutState waits until s shows publisher key in state want.
func waitFanoutState(t *testing.T, s *fanout.Subscriber, key string, want fanout.PublisherState) {
	t.Helper()
	waitFor(t, key+" "+want.String(), 5*time.Second, func() bool {
		st, ok := fanoutEntry(s, key)
		return ok && st.State == want
	})
}

// statusKeys returns the keys and endpoints of s's Status.
func statusKeys(s *fanout.Subscriber) (keys, endpoints []string) {
	for _, st := range s.Status() {
		keys = append(keys, st.Key)
		endpoints = append(endpoints, st.Endpoint)
	}
	return keys, endpoints
}
