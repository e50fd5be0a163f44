package test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// TestSpots_KillOwnerUnderLoad: three Object Servers on a real
// redis-server, one of them a child process, and an Object Client calling
// a few hundred counter Spots from parallel callers. The child is
// SIGKILLed under that load. Then:
//   - every call ended exactly once, with a reply or a typed error, none
//     past its deadline; the Spots of the surviving servers never failed
//     nor moved;
//   - every Spot of the killed node answers from a surviving server within
//     a bound (its lease TTL + margin + liveness and discovery slack),
//     under a higher epoch;
//   - from the replies' (owner, epoch): one epoch of a Spot is never
//     answered by two owners, no call issued after a reply with epoch e
//     was received is answered with an older epoch, and the values counted
//     under one epoch never repeat (a second activation with the same
//     epoch would count from 1 again);
//   - the surviving servers activated each Spot once per epoch.
func TestSpots_KillOwnerUnderLoad(t *testing.T) {
	const (
		spots       = 240
		workers     = 16
		callTimeout = 5 * time.Second
		rehomeBound = 10 * time.Second
	)
	addr, _ := spotsRedis(t)
	acts := newSpotsActivations()
	_, a := spotsNode(t, addr, "osA", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	_, b := spotsNode(t, addr, "osB", routemesh.ObjectServer, spotsFast, spotsKind(acts))
	child, victim := startSpotsChild(t, addr, "osK")
	_, client := spotsNode(t, addr, "oc", routemesh.ObjectClient, spotsFast)
	for _, n := range []*routemesh.Node{a, b, client} {
		if err := n.WaitPeers(ctxT(t, 15*time.Second), 3); err != nil {
			t.Fatalf("%s: peers: %v", n.RID(), err)
		}
		if err := spot.WaitReady(ctxT(t, 15*time.Second), n); err != nil {
			t.Fatal(err)
		}
	}
	spotsServersKnown(t, client, a.RID(), b.RID(), victim)

	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("k-%d", i)
	}
	load := startSpotsLoad(client, ids, workers, callTimeout)
	defer load.stop() // also on a failure below; idempotent

	waitFor(t, "every Spot answered, some by the child", 20*time.Second, func() bool {
		n, byVictim := load.answered(victim)
		return n == spots && byVictim > 0
	})
	victims := load.ownedBy(victim)
	load.kill(victim)
	child.kill(t)
	waitFor(t, "every Spot of the killed node answered elsewhere", rehomeBound+10*time.Second, func() bool {
		return load.rehomed(victims) == len(victims)
	})
	// A few more rounds on the new owners: later calls must not go back
	// to an older epoch.
	load.mark()
	waitFor(t, "more calls answered after the re-home", 10*time.Second, func() bool {
		return load.okSinceMark() > 4*spots
	})
	if !load.stop() {
		t.Fatalf("a call did not end within %v of its deadline", 5*time.Second)
	}

	calls := load.snapshot()
	if int64(len(calls)) != load.issued.Load() {
		t.Fatalf("%d calls issued, %d ended", load.issued.Load(), len(calls))
	}
	isVictim := map[string]bool{}
	for _, id := range victims {
		isVictim[id] = true
	}

	// Every call ended once, by its deadline, with a reply or a typed error.
	errCount := map[string]int{}
	var ok int
	for _, c := range calls {
		if d := c.done.Sub(c.issued); d > callTimeout+time.Second {
			t.Errorf("%s: call took %v, past its %v deadline (%v)", c.id, d, callTimeout, c.err)
		}
		if c.err == nil {
			ok++
			continue
		}
		kind := spotsErrKind(c.err)
		errCount[kind]++
		switch {
		case kind == "untyped":
			t.Errorf("%s: untyped error %v", c.id, c.err)
		case !isVictim[c.id]:
			t.Errorf("%s (owned by a surviving server): %v", c.id, c.err)
		}
	}

	// Per Spot: who answered under which epoch, in order.
	byID := map[string][]spotsCallRec{}
	for _, c := range calls {
		if c.err == nil {
			byID[c.id] = append(byID[c.id], c)
		}
	}
	for _, id := range ids {
		checkSpotReplies(t, id, byID[id])
	}

	// The killed node's Spots moved to a surviving server, under a higher
	// epoch; the others never moved.
	var rehome []time.Duration
	for _, id := range ids {
		rs := byID[id]
		first, last := rs[0], rs[len(rs)-1]
		if !isVictim[id] {
			if first.owner == victim {
				t.Errorf("%s: answered by the killed node but not counted as its Spot", id)
			}
			for _, r := range rs {
				if r.owner != first.owner || r.epoch != first.epoch {
					t.Errorf("%s moved from %s@%d to %s@%d though its owner lived", id, first.owner, first.epoch, r.owner, r.epoch)
					break
				}
			}
			continue
		}
		if last.owner == victim || (last.owner != a.RID() && last.owner != b.RID()) {
			t.Errorf("%s: last answered by %s", id, last.owner)
			continue
		}
		var victimEpoch uint64
		for _, r := range rs {
			if r.owner == victim {
				victimEpoch = max(victimEpoch, r.epoch)
			}
		}
		if last.epoch <= victimEpoch {
			t.Errorf("%s: epoch %d on %s, not above %d on the killed node", id, last.epoch, last.owner, victimEpoch)
		}
		d := load.rehomeTime(id)
		rehome = append(rehome, d)
		if d > rehomeBound {
			t.Errorf("%s answered elsewhere %v after the kill; bound %v", id, d, rehomeBound)
		}
	}

	// The surviving servers: one activation per (ID, epoch), and exactly
	// one per Spot (the killed node's Spots once, after the kill).
	acts.checkOnePerEpoch(t)
	for _, id := range ids {
		if eps := acts.of(id); len(eps) != 1 {
			t.Errorf("%s: %d activations on the surviving servers: %v", id, len(eps), eps)
		}
	}

	slices.Sort(rehome)
	t.Logf("%d calls (%d OK), errors %v; %d of %d Spots on the killed node %s; re-home after the kill: min %v, median %v, max %v (bound %v)",
		len(calls), ok, errCount, len(victims), spots, victim,
		rehome[0].Round(time.Millisecond), rehome[len(rehome)/2].Round(time.Millisecond), rehome[len(rehome)-1].Round(time.Millisecond), rehomeBound)
}

// checkSpotReplies checks the successful replies of one Spot: an epoch is
// never answered by two owners, a call issued after a reply with epoch e
// was received is never answered with an older epoch (an older activation
// still answering: an overlap), and the values counted under one epoch
// never repeat (each call adds 1 to one activation's counter).
func checkSpotReplies(t *testing.T, id string, rs []spotsCallRec) {
	t.Helper()
	if len(rs) == 0 {
		t.Errorf("%s: never answered", id)
		return
	}
	owner := map[uint64]string{}
	values := map[uint64]map[int64]bool{}
	for _, r := range rs {
		if o, ok := owner[r.epoch]; ok && o != r.owner {
			t.Errorf("%s: epoch %d answered by %s and by %s", id, r.epoch, o, r.owner)
		}
		owner[r.epoch] = r.owner
		if values[r.epoch] == nil {
			values[r.epoch] = map[int64]bool{}
		}
		if values[r.epoch][r.value] {
			t.Errorf("%s: value %d twice under epoch %d (on %s): two activations with one epoch", id, r.value, r.epoch, r.owner)
		}
		values[r.epoch][r.value] = true
	}
	// Replies by the time they were received, calls by the time they were
	// issued: the highest epoch received before a call was issued bounds
	// the call's epoch from below.
	byDone := slices.Clone(rs)
	sort.Slice(byDone, func(i, j int) bool { return byDone[i].done.Before(byDone[j].done) })
	byIssued := slices.Clone(rs)
	sort.Slice(byIssued, func(i, j int) bool { return byIssued[i].issued.Before(byIssued[j].issued) })
	var seen spotsCallRec
	j := 0
	for _, r := range byIssued {
		for j < len(byDone) && byDone[j].done.Before(r.issued) {
			if byDone[j].epoch > seen.epoch {
				seen = byDone[j]
			}
			j++
		}
		if r.epoch < seen.epoch {
			t.Errorf("%s: a call issued after epoch %d (from %s) was answered under epoch %d by %s",
				id, seen.epoch, seen.owner, r.epoch, r.owner)
			return
		}
	}
}

// spotsErrKind names the typed error a Spot call ended with.
func spotsErrKind(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{
		{"peer_lost", zlink.ErrPeerLost}, {"timeout", zlink.ErrTimeout}, {"no_target", spot.ErrNoTarget},
		{"fenced", spot.ErrFenced}, {"busy", zlink.ErrBusy}, {"shutting_down", zlink.ErrShuttingDown},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "untyped"
}

// spotsCallRec is one call of the load, as it ended.
type spotsCallRec struct {
	id           string
	issued, done time.Time
	err          error
	owner        string
	epoch        uint64
	value        int64
}

// spotsLoad is parallel callers adding 1 to random Spots until stopped
// (or, at the latest, after a minute), with a ledger of every call.
type spotsLoad struct {
	issued atomic.Int64
	quit   chan struct{}
	once   sync.Once
	done   chan struct{}

	mu        sync.Mutex
	calls     []spotsCallRec
	last      map[string]spotsCallRec // the latest reply received per Spot
	killed    string
	killAt    time.Time
	rehomedAt map[string]time.Time // first reply from another owner to a call issued after the kill
	markAt    time.Time
	okMark    int
}

func startSpotsLoad(n *routemesh.Node, ids []string, workers int, callTimeout time.Duration) *spotsLoad {
	l := &spotsLoad{quit: make(chan struct{}), done: make(chan struct{}), last: map[string]spotsCallRec{},
		rehomedAt: map[string]time.Time{}}
	var wg sync.WaitGroup
	end := time.Now().Add(time.Minute)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				select {
				case <-l.quit:
					return
				default:
				}
				id := ids[rand.IntN(len(ids))]
				l.issued.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				c := spotsCallRec{id: id, issued: time.Now()}
				var res spot.Result
				c.value, res, c.err = spotsAddCall(ctx, n, id, 1)
				c.done = time.Now()
				cancel()
				c.owner, c.epoch = res.Owner, res.Epoch
				l.record(c)
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

func (l *spotsLoad) record(c spotsCallRec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
	if c.err != nil {
		return
	}
	if p, ok := l.last[c.id]; !ok || c.done.After(p.done) {
		l.last[c.id] = c
	}
	if l.killed != "" && c.owner != l.killed && c.issued.After(l.killAt) {
		if _, ok := l.rehomedAt[c.id]; !ok {
			l.rehomedAt[c.id] = c.done
		}
	}
	if !l.markAt.IsZero() && c.issued.After(l.markAt) {
		l.okMark++
	}
}

// answered returns how many Spots were answered, and how many of them
// last by rid.
func (l *spotsLoad) answered(rid string) (all, by int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.last {
		if c.owner == rid {
			by++
		}
	}
	return len(l.last), by
}

// ownedBy lists the Spots whose latest reply came from rid.
func (l *spotsLoad) ownedBy(rid string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for id, c := range l.last {
		if c.owner == rid {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// kill notes that rid is being killed now and returns the time.
func (l *spotsLoad) kill(rid string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed, l.killAt = rid, time.Now()
	return l.killAt
}

// rehomed counts the ids answered by another owner since the kill.
func (l *spotsLoad) rehomed(ids []string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := l.rehomedAt[id]; ok {
			n++
		}
	}
	return n
}

// rehomeTime is how long after the kill id was first answered elsewhere.
func (l *spotsLoad) rehomeTime(id string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rehomedAt[id].Sub(l.killAt)
}

// mark starts counting the successful calls issued from now on.
func (l *spotsLoad) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markAt, l.okMark = time.Now(), 0
}

func (l *spotsLoad) okSinceMark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.okMark
}

// stop ends the load and waits for the calls in flight: false if one of
// them has not ended 5 s past the calls' deadline.
func (l *spotsLoad) stop() bool {
	l.once.Do(func() { close(l.quit) })
	select {
	case <-l.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// snapshot returns every ended call.
func (l *spotsLoad) snapshot() []spotsCallRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}
