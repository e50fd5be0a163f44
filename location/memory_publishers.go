package location

// The in-memory store's fanout publishers, under leases.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

type memPub struct {
	p       Publisher
	expires time.Time
}

// putPublisher is Store.PutPublisher behind validated.
func (m *Memory) putPublisher(ctx context.Context, p Publisher, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pubs[p.Channel] == nil {
		m.pubs[p.Channel] = make(map[string]memPub)
	}
	m.pubs[p.Channel][p.RID] = memPub{p: p, expires: m.now().Add(ttl)}
	return nil
}

// listPublishers is Store.ListPublishers behind validated.
func (m *Memory) listPublishers(ctx context.Context, channel string) ([]Publisher, error) {
	m.mu.Lock()
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

// deletePublisher is Store.DeletePublisher behind validated.
func (m *Memory) deletePublisher(ctx context.Context, channel, rid string, gen uint64) error {
	m.mu.Lock()
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
