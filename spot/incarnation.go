package spot

import (
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// Rule C (confirmed incarnation): an activation acts only while the store
// shard that took its claim is still in the incarnation that took it,
// confirmed by an answer sent within a lease deadline. A failover that
// loses a claim write, or an empty restart, changes the shard's
// incarnation; without this rule the claimer, whose own lease is fine,
// would keep acting on a claim the store no longer has while another node
// claims the Spot — an overlap as long as calls come. With it the overlap
// ends within TTL + margin of the last confirmation.

// incState is one shard incarnation holding claims of this node's active
// Spots, with a Spot of it to probe (any key of the shard routes there).
type incState struct {
	inc      string
	kind, id string       // the probe key
	l        *fence.Lease // confirmations; Acked when a probe answers inc
	refs     int          // active Spots claimed in it
	dead     bool         // the shard answered another incarnation, or its confirmation lapsed
	probing  bool
	lastSent time.Time
}

// incBox holds the incarnations; a leaf structure (mu guards only it).
// Kind actors attach and detach activations; the lease actor probes.
type incBox struct {
	mu  sync.Mutex
	cfg fence.Config
	m   map[string]*incState
}

// attach records an activation claimed in inc with a write sent at sent
// and acknowledged (its claim): the claim itself confirms inc.
func (b *incBox) attach(inc, kind, id string, sent time.Time) *incState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*incState{}
	}
	s := b.m[inc]
	if s == nil || s.dead {
		s = &incState{inc: inc, kind: kind, id: id, l: fence.NewLease(b.cfg)}
		b.m[inc] = s
	}
	s.refs++
	s.l.Acked(s.l.Sent(sent))
	return s
}

// detach forgets one activation of s.
func (b *incBox) detach(s *incState) {
	if s == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.refs--; s.refs <= 0 && b.m[s.inc] == s {
		delete(b.m, s.inc)
	}
}

// valid reports whether s is confirmed now.
func (b *incBox) valid(s *incState, now time.Time) bool {
	if s == nil {
		return true // the store reports no incarnation
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !s.dead && s.l.Valid(now)
}

// due returns the incarnations to probe now (one probe in flight each,
// at most one per renewal period), marking them probing, and those whose
// confirmation lapsed (marking them dead).
func (b *incBox) due(now time.Time, every time.Duration) (probe, lapsed []*incState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.m {
		switch {
		case s.dead:
		case !s.l.Valid(now):
			s.dead = true
			lapsed = append(lapsed, s)
		case !s.probing && now.Sub(s.lastSent) >= every:
			s.probing, s.lastSent = true, now
			probe = append(probe, s)
		}
	}
	return probe, lapsed
}

// sent records a probe of s sent at now.
func (b *incBox) sent(s *incState, now time.Time) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.l.Sent(now)
}

// answered records a probe's answer: the same incarnation confirms it;
// another one kills it (reported true once); an error confirms nothing.
func (b *incBox) answered(s *incState, tok uint64, inc string, err error) (killed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.probing = false
	switch {
	case err != nil:
		s.l.Lost(tok)
	case inc == s.inc:
		s.l.Acked(tok)
	case !s.dead:
		s.dead = true
		return true
	}
	return false
}
