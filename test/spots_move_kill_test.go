package test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// TestSpotsMove_KillOwnerLosesAtMostSinceCheckpoint: an Object Server in
// a child process owns Spots of two persistent counter kinds on a real
// redis-server — one saved every mvN messages (the reply goes out before
// the save), one ReplyAfterWrite — and the client adds 1 to each of them
// K times (different K per Spot). Then the child is SIGKILLed. Then:
//   - the snapshot in Redis is the state at the last save: K rounded down
//     to a multiple of mvN (nothing when K < mvN), and K with
//     ReplyAfterWrite;
//   - after the lease bound each of the child's Spots answers from the
//     surviving server, under a higher epoch, with exactly that value
//     (the "every N" kind loses at most N−1 acknowledged increments; with
//     ReplyAfterWrite nothing acknowledged is lost), and counts on from it;
//   - the surviving server's own Spots never moved nor lost anything;
//   - every call ended once, with a reply or a typed error.
func TestSpotsMove_KillOwnerLosesAtMostSinceCheckpoint(t *testing.T) {
	const rehomeBound = 10 * time.Second
	addr, dir := spotsRedis(t)
	acts := newSpotsActivations()
	_, b := spotsNode(t, addr, "mvB", routemesh.ObjectServer, spotsFast, mvKinds(acts)...)
	child, victim := startMoveChild(t, addr, "mvK")
	_, cl := spotsNode(t, addr, "mvC", routemesh.ObjectClient, spotsFast)
	mvNodes(t, 2, b, cl)
	spotsServersKnown(t, cl, b.RID(), victim)

	type target struct {
		kind, id string
		k        int64 // increments
		want     int64 // the value at the last save
		epoch    uint64
	}
	var targets []target
	var stay []mvCall // Spots on the surviving server
	l := &mvLedger{}
	for _, kc := range []struct {
		kind string
		ks   []int64
	}{
		{mvEvery, []int64{3, 7, 12, 14, 19}}, // never a multiple of mvN: the last save is known to be done
		{mvRaw, []int64{1, 6, 13}},
	} {
		mine, others := mvOwnedBy(t, l, cl, kc.kind, kc.kind+"-k", victim, len(kc.ks))
		for i, c := range mine {
			want := kc.ks[i]
			if kc.kind == mvEvery {
				want = kc.ks[i] / mvN * mvN
			}
			targets = append(targets, target{kind: kc.kind, id: c.id, k: kc.ks[i], want: want, epoch: c.epoch})
		}
		stay = append(stay, others...)
	}
	for _, tg := range targets {
		for i := int64(1); i < tg.k; i++ {
			c := l.must(t, cl, "add", tg.kind, tg.id)
			if c.value != i+1 || c.owner != victim || c.epoch != tg.epoch {
				t.Fatalf("%s: add %d answered %d by %s@%d", tg.id, i+1, c.value, c.owner, c.epoch)
			}
		}
	}
	// The snapshots are the state at each Spot's last save.
	for _, tg := range targets {
		v, _, ok := mvSaved(t, dir, tg.kind, tg.id)
		if v != tg.want || ok != (tg.want > 0) {
			t.Fatalf("%s/%s after %d adds: saved %d (found %v), want %d", tg.kind, tg.id, tg.k, v, ok, tg.want)
		}
	}

	killAt := time.Now()
	child.kill(t)
	// Each Spot of the dead owner answers from the surviving server after
	// its lease lapsed; until then its reads fail with typed errors.
	type back struct {
		after time.Duration
		call  mvCall
	}
	got := make([]back, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(killAt) < rehomeBound+5*time.Second {
				if c := l.call(cl, "reader", "get", tg.kind, tg.id, 2*time.Second); c.err == nil && c.owner != victim {
					got[i] = back{after: c.done.Sub(killAt), call: c}
					return
				}
			}
		}()
	}
	wg.Wait()
	var times []time.Duration
	for i, tg := range targets {
		r := got[i].call
		if r.owner == "" {
			t.Fatalf("%s/%s never answered elsewhere within %v of the kill", tg.kind, tg.id, rehomeBound+5*time.Second)
		}
		times = append(times, got[i].after)
		switch {
		case r.owner != b.RID():
			t.Errorf("%s/%s: answered by %s, want the survivor %s", tg.kind, tg.id, r.owner, b.RID())
		case r.epoch <= tg.epoch:
			t.Errorf("%s/%s: epoch %d on %s, not above %d on the killed owner", tg.kind, tg.id, r.epoch, r.owner, tg.epoch)
		case r.value != tg.want:
			t.Errorf("%s/%s: restored %d after %d acknowledged adds; want %d, the value at the last save", tg.kind, tg.id, r.value, tg.k, tg.want)
		}
		if got[i].after > rehomeBound {
			t.Errorf("%s/%s answered elsewhere %v after the kill; bound %v", tg.kind, tg.id, got[i].after, rehomeBound)
		}
		if c := l.must(t, cl, "add", tg.kind, tg.id); c.value != tg.want+1 || c.owner != r.owner || c.epoch != r.epoch {
			t.Errorf("%s/%s: the next add answered %d by %s@%d; want %d by %s@%d", tg.kind, tg.id, c.value, c.owner, c.epoch, tg.want+1, r.owner, r.epoch)
		}
	}
	for _, s := range stay {
		if c := l.must(t, cl, "get", s.kind, s.id); c.value != 1 || c.owner != s.owner || c.epoch != s.epoch {
			t.Errorf("%s/%s on the survivor: %d by %s@%d, was 1 by %s@%d", s.kind, s.id, c.value, c.owner, c.epoch, s.owner, s.epoch)
		}
	}
	errs := l.check(t)
	acts.checkOnePerEpoch(t)
	slices.Sort(times)
	lost := ""
	for _, tg := range targets {
		lost += fmt.Sprintf(" %s:%d→%d", tg.kind, tg.k, tg.want)
	}
	t.Logf("%d Spots on the killed owner %s (acknowledged→restored:%s); answered elsewhere after the kill: min %v, max %v (bound %v); %d calls, errors %v",
		len(targets), victim, lost, times[0].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), rehomeBound, len(l.snapshot()), errs)
}
