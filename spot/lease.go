package spot

import (
	"sync"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// leaseBox holds the node's ownership lease (rule R2: its deadline lives
// outside every restartable actor). The lease actor writes it; Spot turns,
// replies, claims and outbound calls read it. A leaf structure: mu guards
// only these fields.
type leaseBox struct {
	mu    sync.Mutex
	cfg   fence.Config
	gen   uint64 // current lease generation; 0 before the first
	l     *fence.Lease
	ended bool // fenced for good (Stop, node failure)
}

// holder returns the current lease generation and whether it is valid now.
func (b *leaseBox) holder(now time.Time) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l == nil || b.ended {
		return b.gen, false
	}
	return b.gen, b.l.Valid(now)
}

// valid reports whether an activation claimed under gen may act now.
func (b *leaseBox) valid(gen uint64, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.ended && b.l != nil && gen == b.gen && b.l.Valid(now)
}

// begin starts generation gen (the first, or after a refusal).
func (b *leaseBox) begin(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen, b.l = gen, fence.NewLease(b.cfg)
}

// sent records a create or renewal of gen sent at now.
func (b *leaseBox) sent(gen uint64, now time.Time) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l == nil || gen != b.gen {
		return 0, false
	}
	return b.l.Sent(now), true
}

// acked counts an acknowledged write of gen.
func (b *leaseBox) acked(gen, tok uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l != nil && gen == b.gen {
		b.l.Acked(tok)
	}
}

// lost forgets a write of gen whose outcome is unknown.
func (b *leaseBox) lost(gen, tok uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l != nil && gen == b.gen {
		b.l.Lost(tok)
	}
}

// refuse ends generation gen for good (R1).
func (b *leaseBox) refuse(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l != nil && gen == b.gen {
		b.l.Refused()
	}
}

// expired reports whether gen had a deadline that has passed (a lease
// that was valid once and is not any more), or was refused.
func (b *leaseBox) expired(gen uint64, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l == nil || gen != b.gen {
		return false
	}
	return !b.l.Valid(now) && !b.l.Deadline().IsZero()
}

// end fences every activation for good (Stop, node failure).
func (b *leaseBox) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
}
