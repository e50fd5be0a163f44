package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/fence"
)

// A failover loses exactly the last k acknowledged writes (and everything
// written after the first of them), plus whatever the lagging replica had
// not received; replication is in order; the shard gets a new incarnation
// and a new clock.
func TestShard_FailoverLosesLastKAcknowledgedWrites(t *testing.T) {
	h := func(i int) fence.Holder { return fence.Holder{RID: fmt.Sprintf("x%d", i), Gen: 1} }
	for _, tc := range []struct {
		k, tail        int // tail: acknowledged writes the replica lacks
		lost, lostAckd int
	}{
		{k: 0, tail: 0, lost: 1, lostAckd: 0}, // only the unacknowledged write
		{k: 1, tail: 0, lost: 2, lostAckd: 1}, // the unacknowledged write after it goes too
		{k: 3, tail: 0, lost: 4, lostAckd: 3},
		{k: 0, tail: 2, lost: 3, lostAckd: 2}, // the replica's lag alone
		{k: 1, tail: 2, lost: 3, lostAckd: 2}, // k within the lag changes nothing
		{k: 4, tail: 2, lost: 5, lostAckd: 4},
	} {
		p := quiet()
		p.nodes, p.replLag = 0, 0
		w := newWorld(1, p)
		sh := w.shards[0]
		w.now = time.Second
		for i := 0; i < 8; i++ { // 8 acknowledged writes the replica has
			sh.createLease(h(i))
			sh.last.acked = true
		}
		w.now += time.Millisecond
		for i := 8; i < 8+tc.tail; i++ { // acknowledged, not replicated yet
			sh.createLease(h(i))
			sh.last.acked, sh.last.replicated = true, w.now+time.Second
		}
		sh.createLease(h(99)) // neither acknowledged nor replicated
		sh.last.replicated = w.now + time.Second
		exp, drift := sh.leases[h(0)], sh.drift
		for sh.drift == drift {
			sh.drift = w.drift() // so the new clock differs
		}
		drift = sh.drift

		sh.failover(tc.k)

		if w.st.lostWrites != tc.lost || w.st.lostAcked != tc.lostAckd {
			t.Errorf("k %d, tail %d: lost %d writes (%d acknowledged), want %d (%d)", tc.k, tc.tail, w.st.lostWrites, w.st.lostAcked, tc.lost, tc.lostAckd)
		}
		kept := 8 + tc.tail + 1 - tc.lost
		for i := 0; i < 8+tc.tail; i++ {
			if _, ok := sh.leases[h(i)]; ok != (i < kept) {
				t.Errorf("k %d, tail %d: lease %d present %v, want %v", tc.k, tc.tail, i, ok, i < kept)
			}
		}
		if _, ok := sh.leases[h(99)]; ok {
			t.Errorf("k %d, tail %d: the unreplicated write survived", tc.k, tc.tail)
		}
		if (w.lossAt >= 0) != (tc.lostAckd > 0) || sh.inc != 2 || sh.drift == drift {
			t.Errorf("k %d, tail %d: loss at %v, incarnation %d, drift %v→%v", tc.k, tc.tail, w.lossAt, sh.inc, drift, sh.drift)
		}
		want := w.now + time.Duration(float64(exp-w.now)*(1+drift)/(1+sh.drift))
		if got := sh.leases[h(0)]; got != want {
			t.Errorf("k %d: the remaining TTL did not move to the new clock: %v, want %v", tc.k, got, want)
		}
		for i := 1; i < len(sh.log); i++ {
			if sh.log[i].replicated < sh.log[i-1].replicated {
				t.Fatalf("replication out of order at %d", i)
			}
		}
	}
}

// Tombstones (R1): a claimer's check writes one for a gone lease in the
// same step; create and renew are refused while it lasts (10 × TTL by the
// shard's clock); a live lease is never tombstoned.
func TestShard_TombstoneRefusesCreateAndRenew(t *testing.T) {
	p := quiet()
	p.nodes = 0
	w := newWorld(1, p)
	sh := w.shards[0]
	x := fence.Holder{RID: "x", Gen: 1}
	if !sh.createLease(x) || sh.createLease(x) {
		t.Fatal("create: once, then refused while the key exists")
	}
	if sh.checkOwner(x) != fence.Live || sh.tombstoned(x) {
		t.Fatal("a live lease was tombstoned")
	}
	w.now += sh.ttl(p.fence.TTL) + time.Millisecond
	if sh.renewLease(x) {
		t.Fatal("renewed a lease that expired")
	}
	if sh.checkOwner(x) != fence.Gone || !sh.tombstoned(x) {
		t.Fatal("a gone lease was not tombstoned by the check")
	}
	if sh.createLease(x) || sh.renewLease(x) || w.st.tombRefusals != 2 {
		t.Fatalf("a tombstoned lease was created or renewed (%d refusals)", w.st.tombRefusals)
	}
	w.now += sh.ttl(10*p.fence.TTL) - time.Millisecond
	if !sh.tombstoned(x) {
		t.Fatal("the tombstone went before 10 × TTL")
	}
}
