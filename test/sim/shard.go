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
	writes []*write // the last writes, newest last (a failover may lose them)
	last   *write   // the write of the operation being applied (nil for a read)
}

// write is one applied write: how to undo it, when the replica has it,
// and when the writer was told it succeeded.
type write struct {
	undo       func()
	replicated time.Duration // true time the replica has it
	acked      time.Duration // true time the answer left (-1: not yet)
	lost       bool
}

func (s *shard) ttl() time.Duration {
	return time.Duration(float64(s.w.p.fence.TTL) / (1 + s.drift))
}

func (s *shard) live(h fence.Holder) bool {
	exp, ok := s.leases[h]
	return ok && exp > s.w.now
}

// wrote remembers how to undo a write; the replica gets it after a lag.
func (s *shard) wrote(undo func()) {
	wr := &write{undo: undo, replicated: s.w.now + s.w.between(0, s.w.p.replLag), acked: -1}
	s.writes = append(s.writes, wr)
	if len(s.writes) > 32 {
		s.writes = s.writes[1:]
	}
	s.last = wr
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

// failover promotes the replica: it lacks every write not yet replicated,
// and (a double failure, with doubleLoss chance) also the last k writes it
// had. A lost write that was already acknowledged is a lost acknowledged
// write: from then on overlaps are allowed (and counted).
func (s *shard) failover(k int) {
	s.w.failovers++
	double := s.w.rng.Float64() < s.w.p.doubleLoss
	for i := len(s.writes) - 1; i >= 0; i-- {
		wr := s.writes[i]
		if wr.replicated <= s.w.now && !(double && k > 0) {
			continue
		}
		if wr.replicated <= s.w.now {
			k--
		}
		wr.undo()
		wr.lost = true
		if wr.acked >= 0 && s.w.lossAt < 0 {
			s.w.lossAt = s.w.now
		}
		s.writes = append(s.writes[:i], s.writes[i+1:]...)
	}
}

// restartEmpty loses everything.
func (s *shard) restartEmpty() {
	for spot, rec := range s.recs {
		s.w.lostClaims[claimKey{spot, rec}] = true
	}
	for _, wr := range s.writes {
		wr.lost = true
	}
	clear(s.leases)
	clear(s.tombs)
	clear(s.recs)
	s.writes = nil
	if s.w.lossAt < 0 {
		s.w.lossAt = s.w.now
	}
}
