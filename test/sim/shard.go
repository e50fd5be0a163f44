package sim

import (
	"fmt"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// shard is one store shard: a master whose replica is what a failover
// leaves. Keys expire by the shard's own clock (drift), which a failover
// replaces with the promoted replica's. Every answer carries the shard's
// incarnation, which a failover or restart bumps.
type shard struct {
	w      *world
	id     int
	drift  float64
	inc    uint64
	leases map[fence.Holder]time.Duration // true time each lease key expires
	tombs  map[fence.Holder]time.Duration // true time each tombstone expires
	recs   map[int]fence.Record
	log    []*write // the last writes in replication order, newest last
	last   *write   // the write of the operation being applied (nil for a read or a refusal)
	caller string   // who sent the operation being applied (for the trace)
}

// write is one applied write: how to undo it, when the replica has it,
// and whether the master acknowledged it.
type write struct {
	what       string
	undo       func()
	replicated time.Duration // true time the replica has it (non-decreasing along the log)
	acked      bool
	lost       bool
}

func newShard(w *world, id int) *shard {
	return &shard{w: w, id: id, drift: w.drift(), inc: 1, leases: map[fence.Holder]time.Duration{},
		tombs: map[fence.Holder]time.Duration{}, recs: map[int]fence.Record{}}
}

// ttl converts a duration on the shard's clock to true time.
func (s *shard) ttl(d time.Duration) time.Duration { return time.Duration(float64(d) / (1 + s.drift)) }

func (s *shard) live(h fence.Holder) bool {
	exp, ok := s.leases[h]
	return ok && exp > s.w.now
}

func (s *shard) tombstoned(h fence.Holder) bool {
	exp, ok := s.tombs[h]
	return ok && exp > s.w.now
}

// wrote logs a write; the replica gets it after a lag, in order.
func (s *shard) wrote(what string, undo func()) {
	rep := s.w.now + s.w.between(s.w.p.replLagMin, max(s.w.p.replLag, s.w.p.replLagMin))
	if n := len(s.log); n > 0 {
		rep = max(rep, s.log[n-1].replicated)
	}
	wr := &write{what: what, undo: undo, replicated: rep}
	s.log = append(s.log, wr)
	if len(s.log) > 64 {
		s.log = s.log[1:]
	}
	s.last = wr
	s.w.tracef("shard%d/%d %s by %s", s.id, s.inc, what, s.caller)
}

// createLease is R1's only create: refused when the key exists or the
// lifecycle is tombstoned.
func (s *shard) createLease(h fence.Holder) bool {
	if s.tombstoned(h) {
		s.w.st.tombRefusals++
		s.w.tracef("shard%d create %v refused: tombstoned", s.id, h)
		return false
	}
	if s.live(h) {
		s.w.tracef("shard%d create %v refused: exists", s.id, h)
		return false
	}
	prev, had := s.leases[h]
	s.leases[h] = s.w.now + s.ttl(s.w.p.fence.TTL)
	s.wrote(fmt.Sprintf("create lease %v", h), func() { s.restore(s.leases, h, prev, had) })
	return true
}

// renewLease is R1's renewal: an existing, untombstoned key only.
func (s *shard) renewLease(h fence.Holder) bool {
	if s.tombstoned(h) {
		s.w.st.tombRefusals++
		s.w.tracef("shard%d renew %v refused: tombstoned", s.id, h)
		return false
	}
	if !s.live(h) {
		s.w.tracef("shard%d renew %v refused: gone", s.id, h)
		return false
	}
	prev := s.leases[h]
	s.leases[h] = s.w.now + s.ttl(s.w.p.fence.TTL)
	s.wrote(fmt.Sprintf("renew lease %v", h), func() { s.restore(s.leases, h, prev, true) })
	return true
}

func (s *shard) restore(m map[fence.Holder]time.Duration, h fence.Holder, prev time.Duration, had bool) {
	if had {
		m[h] = prev
	} else {
		delete(m, h)
	}
}

// checkOwner is R3's owner check: live, or gone and tombstoned (kept 10 ×
// TTL by this shard's clock) in the same step.
func (s *shard) checkOwner(h fence.Holder) fence.OwnerState {
	s.step("check", -1)
	if s.live(h) {
		s.w.tracef("shard%d check %v by %s: live", s.id, h, s.caller)
		return fence.Live
	}
	prev, had := s.tombs[h]
	s.tombs[h] = s.w.now + s.ttl(10*s.w.p.fence.TTL)
	s.wrote(fmt.Sprintf("check %v: gone, tombstone", h), func() { s.restore(s.tombs, h, prev, had) })
	return fence.Gone
}

// casResult is a read's or compare-and-set's answer: the record as the
// master had it at true time at (after the write when ok).
type casResult struct {
	ok  bool
	cur fence.Record
	at  time.Duration
}

// step tells a scenario hook (w.onStep) which claim step is applied now.
func (s *shard) step(what string, spot int) {
	if s.w.onStep != nil {
		s.w.onStep(s.caller, what, spot)
	}
}

func (s *shard) read(spot int) casResult {
	s.step("read", spot)
	s.w.tracef("shard%d read spot%d by %s: %v", s.id, spot, s.caller, s.recs[spot])
	return casResult{cur: s.recs[spot], at: s.w.now}
}

// cas is R3's compare-and-set on owner, generation and epoch.
func (s *shard) cas(spot int, expect, next fence.Record) casResult {
	s.step("cas", spot)
	cur := s.recs[spot]
	if cur != expect {
		s.w.tracef("shard%d cas spot%d %v→%v by %s refused: found %v", s.id, spot, expect, next, s.caller, cur)
		return casResult{cur: cur, at: s.w.now}
	}
	if next.Epoch <= expect.Epoch || !next.Owned() {
		s.w.problem("spot %d: a claim writes %v over %v (R4: epochs never decrease)", spot, next, expect)
	}
	s.set(spot, cur, next, kindClaim)
	return casResult{ok: true, cur: next, at: s.w.now}
}

// touch writes rec again if it is the record (ackedMine): its
// acknowledgement (after WAIT) confirms the record is replicated.
func (s *shard) touch(spot int, rec fence.Record) casResult {
	cur := s.recs[spot]
	if cur != rec {
		s.w.tracef("shard%d touch spot%d %v refused: found %v", s.id, spot, rec, cur)
		return casResult{cur: cur, at: s.w.now}
	}
	s.set(spot, cur, rec, kindTouch)
	return casResult{ok: true, cur: rec, at: s.w.now}
}

// release (R4) clears the owner if the record equals rec; the epoch stays.
func (s *shard) release(spot int, rec fence.Record) casResult {
	cur := s.recs[spot]
	if !fence.Matches(cur, rec) {
		s.w.tracef("shard%d release spot%d %v refused: found %v", s.id, spot, rec, cur)
		return casResult{cur: cur, at: s.w.now}
	}
	next := fence.Record{Epoch: rec.Epoch}
	s.set(spot, cur, next, kindRelease)
	return casResult{ok: true, cur: next, at: s.w.now}
}

// transfer (R4) moves the record from rec to holder to, epoch + 1.
func (s *shard) transfer(spot int, rec fence.Record, to fence.Holder) casResult {
	cur := s.recs[spot]
	if !fence.Matches(cur, rec) {
		s.w.tracef("shard%d transfer spot%d %v refused: found %v", s.id, spot, rec, cur)
		return casResult{cur: cur, at: s.w.now}
	}
	next := fence.Record{Holder: to, Epoch: rec.Epoch + 1}
	s.set(spot, cur, next, kindTransfer)
	return casResult{ok: true, cur: next, at: s.w.now}
}

func (s *shard) set(spot int, prev, next fence.Record, kind byte) {
	s.recs[spot] = next
	idx := s.w.applied(spot, kind, next)
	s.wrote(fmt.Sprintf("%c spot%d %v→%v", kind, spot, prev, next), func() {
		s.recs[spot] = prev
		s.w.hist[spot][idx].lost = true
	})
}

// failover promotes the replica. It lacks every write it had not received
// yet and, when k > 0, the last k acknowledged writes (with everything
// after the first of them: replication is in order). Its clock is
// another machine's; the expiry times it holds are absolute, so what
// remains of them now runs at the new rate.
func (s *shard) failover(k int) {
	w := s.w
	w.st.failovers++
	cut := len(s.log)
	for i, wr := range s.log {
		if wr.replicated > w.now {
			cut = i
			break
		}
	}
	for i, seen := len(s.log)-1, 0; i >= 0 && seen < k; i-- {
		if s.log[i].acked {
			seen++
			cut = min(cut, i)
		}
	}
	lost, writes := 0, len(s.log)-cut
	for i := len(s.log) - 1; i >= cut; i-- {
		wr := s.log[i]
		wr.undo()
		wr.lost = true
		if wr.acked {
			lost++
		}
		w.tracef("shard%d failover loses %s (acked %v)", s.id, wr.what, wr.acked)
	}
	s.log = s.log[:cut]
	w.st.lostWrites += writes
	s.inc++
	old := s.drift
	s.drift = w.drift()
	rescale := func(m map[fence.Holder]time.Duration) {
		for h, exp := range m {
			if exp > w.now {
				m[h] = w.now + time.Duration(float64(exp-w.now)*(1+old)/(1+s.drift))
			}
		}
	}
	rescale(s.leases)
	rescale(s.tombs)
	w.tracef("shard%d FAILOVER to incarnation %d, k=%d: %d writes lost, %d acknowledged", s.id, s.inc, k, writes, lost)
	w.lost(lost)
}

// restartEmpty loses everything the shard held.
func (s *shard) restartEmpty() {
	w := s.w
	w.st.restarts++
	lost := len(s.recs) + len(s.leases) + len(s.tombs)
	for spot := range s.recs {
		for i := range w.hist[spot] {
			w.hist[spot][i].lost = true
		}
	}
	for _, wr := range s.log {
		wr.lost = true
	}
	clear(s.leases)
	clear(s.tombs)
	clear(s.recs)
	s.log = nil
	s.inc++
	s.drift = w.drift()
	w.tracef("shard%d RESTART EMPTY to incarnation %d (%d keys lost)", s.id, s.inc, lost)
	w.lost(lost)
}

// lost records that n acknowledged writes (or keys) were lost now.
func (w *world) lost(n int) {
	if n == 0 {
		return
	}
	w.st.lostAcked += n
	w.lossEvents = append(w.lossEvents, w.now)
	if w.lossAt < 0 {
		w.lossAt = w.now
	}
}
