package zguard

import (
	"fmt"
	"net"
	"net/netip"
)

// maxKnownSources bounds the sources a listener remembers as having
// completed a handshake; past it the one that authenticated longest ago is
// forgotten. Only a completed handshake adds one, so strangers cannot grow
// it.
const maxKnownSources = 4096

// pendingLimits are the caps of a pendingBook (see Config).
type pendingLimits struct {
	max       int // pending connections in all
	perSource int // pending connections from one source
	reserved  int // of max, the slots only known sources may take
}

// pendingBook decides which accepted connections may wait for their
// handshake. It is pure accounting: it does no I/O, reads no clock and
// takes no lock (the listener's mutex guards it).
//
// A connection is pending from its accept until its handshake has
// authenticated (or it closed). The book keeps three caps: all pending
// connections (limits.max); those of one source (limits.perSource); and
// those of strangers (limits.max - limits.reserved), so limits.reserved
// slots stay free for sources that completed a handshake before: a flood
// of strangers, from however many addresses, cannot keep a known peer out.
type pendingBook struct {
	limits    pendingLimits
	total     int                   // pending connections
	strangers int                   // of total, from sources not known when admitted
	bySource  map[netip.Addr]int    // pending connections per source
	known     map[netip.Addr]uint64 // source → sequence number of its last handshake
	seq       uint64
}

func newPendingBook(l pendingLimits) *pendingBook {
	return &pendingBook{limits: l, bySource: map[netip.Addr]int{}, known: map[netip.Addr]uint64{}}
}

// admit counts one more pending connection from src, or says why not.
// known tells release which pool the connection took.
func (b *pendingBook) admit(src netip.Addr) (known bool, err error) {
	_, known = b.known[src]
	switch {
	case b.total >= b.limits.max:
		return known, &PendingLimitError{Source: src, Limit: b.limits.max}
	case !known && b.strangers >= b.limits.max-b.limits.reserved:
		return known, &PendingLimitError{Source: src, Limit: b.limits.max - b.limits.reserved, Strangers: true}
	case b.bySource[src] >= b.limits.perSource:
		return known, &PendingLimitError{Source: src, Limit: b.limits.perSource, PerSource: true}
	}
	b.total++
	if !known {
		b.strangers++
	}
	b.bySource[src]++
	return known, nil
}

// release frees the slot of one connection admit let in; known is what
// admit returned for it.
func (b *pendingBook) release(src netip.Addr, known bool) {
	n, ok := b.bySource[src]
	if !ok || b.total == 0 {
		panic("zguard: pendingBook.release of a source with nothing pending")
	}
	if n <= 1 {
		delete(b.bySource, src)
	} else {
		b.bySource[src] = n - 1
	}
	b.total--
	if !known {
		b.strangers--
	}
}

// learn records that a connection from src completed its handshake: its
// later connections may take the reserved slots.
func (b *pendingBook) learn(src netip.Addr) {
	b.seq++
	if _, ok := b.known[src]; !ok && len(b.known) >= maxKnownSources {
		var oldest netip.Addr
		first := true
		for a, s := range b.known {
			if first || s < b.known[oldest] {
				oldest, first = a, false
			}
		}
		delete(b.known, oldest)
	}
	b.known[src] = b.seq
}

// sourceOf is the source a connection's pending slots are counted by: its
// IPv4 address, or the /64 network of its IPv6 address (one host commonly
// owns a whole /64). An address that is not TCP counts as one source.
func sourceOf(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// PendingLimitError is why a connection was refused at accept: a cap on
// pending handshakes was reached. It matches ErrTooManyPending, and
// ErrTooManyFromSource when the cap was its source's.
type PendingLimitError struct {
	Source    netip.Addr // the refused connection's source (see Config.MaxPendingPerSource)
	Limit     int        // the cap that was reached
	PerSource bool       // the cap of one source's pending connections
	Strangers bool       // the cap of strangers' pending connections (the rest is reserved)
}

func (e *PendingLimitError) Error() string {
	switch {
	case e.PerSource:
		return fmt.Sprintf("%v: %d from source %v", ErrTooManyFromSource, e.Limit, e.Source)
	case e.Strangers:
		return fmt.Sprintf("%v: %d from sources without a completed handshake (source %v)", ErrTooManyPending, e.Limit, e.Source)
	default:
		return fmt.Sprintf("%v: %d (source %v)", ErrTooManyPending, e.Limit, e.Source)
	}
}

// Is reports whether target is ErrTooManyPending, or ErrTooManyFromSource
// for a source's cap.
func (e *PendingLimitError) Is(target error) bool {
	return target == ErrTooManyPending || e.PerSource && target == ErrTooManyFromSource
}
