package sim

import (
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// shard is one store shard (a master; its replica is what a failover
// leaves). Lease keys expire by the shard's own clock.
type shard struct {
	w      *world
	drift  float64
	leases map[fence.Holder]time.Duration // true time each lease key expires
	tombs  map[fence.Holder]bool
	recs   map[int]fence.Record
	undo   []func() // the last acknowledged writes, newest last
}

func (s *shard) ttl() time.Duration {
	return time.Duration(float64(s.w.p.fence.TTL) / (1 + s.drift))
}

func (s *shard) live(h fence.Holder) bool {
	exp, ok := s.leases[h]
	return ok && exp > s.w.now
}

// wrote remembers how to undo an acknowledged write (a failover may lose it).
func (s *shard) wrote(undo func()) {
	s.undo = append(s.undo, undo)
	if len(s.undo) > 16 {
		s.undo = s.undo[1:]
	}
}

// createLease is R1's first put: refused when the key exists or the
// lifecycle is tombstoned.
func (s *shard) createLease(h fence.Holder) bool {
	if s.tombs[h] || s.live(h) {
		return false
	}
	prev, had := s.leases[h]
	s.leases[h] = s.w.now + s.ttl()
	s.wrote(func() { s.restoreLease(h, prev, had) })
	return true
}

// renewLease is R1's renewal: only an existing, untombstoned key.
func (s *shard) renewLease(h fence.Holder) bool {
	if s.tombs[h] || !s.live(h) {
		return false
	}
	prev := s.leases[h]
	s.leases[h] = s.w.now + s.ttl()
	s.wrote(func() { s.restoreLease(h, prev, true) })
	return true
}

func (s *shard) restoreLease(h fence.Holder, prev time.Duration, had bool) {
	if had {
		s.leases[h] = prev
	} else {
		delete(s.leases, h)
	}
}

// checkOwner is R3's owner check: live, or gone and tombstoned in the same
// step.
func (s *shard) checkOwner(h fence.Holder) fence.OwnerState {
	if s.live(h) {
		return fence.Live
	}
	if !s.tombs[h] {
		s.tombs[h] = true
		s.wrote(func() { delete(s.tombs, h) })
	}
	return fence.Gone
}

func (s *shard) read(spot int) fence.Record { return s.recs[spot] }

// cas is R3's compare-and-set on the whole record.
func (s *shard) cas(spot int, expect, next fence.Record) bool {
	if s.recs[spot] != expect {
		return false
	}
	s.recs[spot] = next
	s.w.claimApplied(spot, next)
	s.wrote(func() {
		if s.recs[spot] == next {
			s.recs[spot] = expect
		}
		s.w.lostClaims[claimKey{spot, next}] = true
	})
	return true
}

// failover promotes the replica, which lacks the last k acknowledged writes.
func (s *shard) failover(k int) {
	lost := false
	for ; k > 0 && len(s.undo) > 0; k-- {
		s.undo[len(s.undo)-1]()
		s.undo = s.undo[:len(s.undo)-1]
		lost = true
	}
	if lost && s.w.lossAt < 0 {
		s.w.lossAt = s.w.now
	}
}

// restartEmpty loses everything.
func (s *shard) restartEmpty() {
	for spot, rec := range s.recs {
		s.w.lostClaims[claimKey{spot, rec}] = true
	}
	clear(s.leases)
	clear(s.tombs)
	clear(s.recs)
	s.undo = nil
	if s.w.lossAt < 0 {
		s.w.lossAt = s.w.now
	}
}
