package test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// spotsFailoverCfg: a lease that rides out a failover of the master that
// holds it (its deadline is 3.5 s past the last acknowledged renewal; a
// forced failover takes well under a second), with a probe of each store
// incarnation every 500 ms.
var spotsFailoverCfg = spot.Config{LeaseTTL: 4 * time.Second, RenewEvery: 500 * time.Millisecond, Margin: 500 * time.Millisecond}

// TestSpotsCluster_FailoverFencesAndRecovers: two Object Servers and an
// Object Client on a real 3-master Redis Cluster in which one master, M,
// has a replica (so writes to M's slots wait for it: WAIT 1). A few
// hundred counter Spots are active, about a third of them with their
// record on M, and parallel callers keep calling all of them. The replica
// is promoted (CLUSTER FAILOVER FORCE); M becomes its replica. Then:
//   - every server that owned Spots on M sees M's incarnation (run_id)
//     change exactly once (StoreIncarnations), and exactly the Spots
//     claimed on M are fenced (Fenced sums to their number);
//   - each Spot on M answers again, under a higher epoch (the records
//     survived: they were replicated before the claims returned);
//   - the Spots on the other masters are not disturbed: no call to one of
//     them failed, and each still answers from its first owner under its
//     first epoch, with one activation;
//   - every call ended exactly once (a ledger), the failed ones — calls to
//     Spots on M during the failover — with a typed error; no call issued
//     after a reply under epoch e was answered under an older epoch, and
//     one (Spot, epoch) was activated once.
func TestSpotsCluster_FailoverFencesAndRecovers(t *testing.T) {
	t.Parallel()
	const (
		spots        = 240
		workers      = 12
		callTimeout  = 3 * time.Second
		recoverBound = 10 * time.Second
	)
	start := time.Now()
	c := locationtest.StartRedisCluster(t)
	masters := c.Nodes()
	slots := clusterSlotMap(t, masters)
	// M is the master holding the mesh's descriptors (renewed every
	// ~170 ms, so written to through the failover); the ownership leases
	// land where their RIDs hash, on M or not (logged).
	mi := slots.master(t, keySlot(t, masters[0], "{mesh:"+autoMesh+"}"))
	m := masters[mi]
	replica := c.AddReplica(t, m)
	// Once promoted, the replica serves M a full resync at once, not after
	// redis' default 5 s wait for more replicas. A forced failover does
	// not pause M: writes M takes between the promotion and its demotion
	// (descriptor and lease renewals) make its partial resync fail. Until
	// the full one is done no write to M's slots is confirmed (WAIT 1):
	// with the 5 s default a node whose lease is on M loses it.
	replica.Command(t, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	// AddReplica returns once every node knows the replica, not yet once
	// every master knows it as M's replica: a master still taking it for
	// a master denies it the failover vote ("it is a master node").
	mID, rID := m.Command(t, "CLUSTER", "MYID"), replica.Command(t, "CLUSTER", "MYID")
	waitFor(t, "every master to know the replica as M's", 15*time.Second, func() bool {
		for _, x := range masters {
			if !knowsReplicaOf(t, x, rID, mID) {
				return false
			}
		}
		return true
	})
	clusterUp := time.Since(start)

	prefix := newClusterKeyPrefix()
	acts := newSpotsActivations()
	servers := []*routemesh.Node{
		spotsClusterNode(t, c, prefix, "osA", routemesh.ObjectServer, spotsFailoverCfg, spotsKind(acts)),
		spotsClusterNode(t, c, prefix, "osB", routemesh.ObjectServer, spotsFailoverCfg, spotsKind(acts)),
	}
	client := spotsClusterNode(t, c, prefix, "oc", routemesh.ObjectClient, spotsFailoverCfg)
	spotsReady(t, append([]*routemesh.Node{client}, servers...)...)
	spotsServersKnown(t, client, servers[0].RID(), servers[1].RID())
	var leasesOnM []string
	for _, s := range servers {
		if slots.master(t, keySlot(t, m, "{spotlease:"+autoMesh+":"+s.RID()+"}")) == mi {
			leasesOnM = append(leasesOnM, s.RID())
		}
	}

	// Activate every Spot once; note who answered under which epoch.
	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("f-%d", i)
	}
	ledger := newClusterLedger()
	before := map[string]clusterCall{}
	var mu sync.Mutex
	parallel(ids, workers, func(id string) {
		call := ledger.call(client, id, callTimeout)
		mu.Lock()
		before[id] = call
		mu.Unlock()
	})
	for _, id := range ids {
		if b := before[id]; b.err != nil {
			t.Fatalf("%s: first call: %v", id, b.err)
		}
	}
	where := spotMasters(t, slots, prefix, ids)
	onM := map[string]bool{}
	ownsOnM := map[string]int{}
	for _, id := range ids {
		if where[id] == mi {
			onM[id] = true
			ownsOnM[before[id].owner]++
		}
	}
	if len(onM) == 0 || len(onM) == spots {
		t.Fatalf("%d of %d Spots on master %s: want some, not all", len(onM), spots, m.Addr())
	}
	gens := map[string]uint64{}
	for _, s := range servers {
		gens[s.RID()] = spotsStats(t, s).LeaseGeneration
	}
	mRunID := infoValue(t, m, "server", "run_id")
	rRunID := infoValue(t, replica, "server", "run_id")

	// Parallel callers on every Spot, through the failover.
	load := startClusterLoad(ledger, client, ids, workers, callTimeout)
	defer load.stop()
	waitFor(t, "the load under way", 10*time.Second, func() bool { return load.ok() >= spots })

	failAt := time.Now()
	replica.Command(t, "CLUSTER", "FAILOVER", "FORCE")
	waitFor(t, "the replica promoted", 15*time.Second, func() bool {
		return infoValue(t, replica, "replication", "role") == "master" && len(ownSlots(t, replica)) > 0
	})
	promoted := time.Since(failAt)
	was := map[string]uint64{}
	for id, b := range before {
		was[id] = b.epoch
	}
	load.markFailover(time.Now(), was)
	waitFor(t, "the old master demoted", 15*time.Second, func() bool {
		return infoValue(t, m, "replication", "role") == "slave"
	})
	demoted := time.Since(failAt)

	// The owners see the incarnation change; the Spots on M answer again
	// under a higher epoch.
	var seenInc time.Duration
	waitFor(t, "every owner of Spots on M sees its incarnation change", recoverBound, func() bool {
		for _, s := range servers {
			if ownsOnM[s.RID()] > 0 && spotsStats(t, s).StoreIncarnations == 0 {
				return false
			}
		}
		return true
	})
	seenInc = time.Since(failAt)
	waitFor(t, "every Spot on M answered under a higher epoch", recoverBound, func() bool {
		return load.recovered(onM) == len(onM)
	})
	allBack := time.Since(failAt)
	load.mark()
	waitFor(t, "more calls answered after the recovery", 10*time.Second, func() bool { return load.okSinceMark() >= 2*spots })
	if !load.stop() {
		t.Fatalf("a call did not end within 10 s of its %v deadline", callTimeout)
	}

	// A last call to every Spot, after the load.
	after := map[string]clusterCall{}
	parallel(ids, workers, func(id string) {
		call := ledger.call(client, id, callTimeout)
		mu.Lock()
		after[id] = call
		mu.Unlock()
	})
	calls := ledger.check(t)

	// Failures: only calls to Spots on M, only typed, only around the
	// failover.
	errs := map[string]int{}
	sample := map[string]string{}
	var ok int
	var lastErr time.Time
	byID := map[string][]clusterCall{}
	for _, call := range calls {
		if d := call.done.Sub(call.issued); d > callTimeout+time.Second {
			t.Errorf("%s: call took %v, past its %v deadline (%v)", call.id, d, callTimeout, call.err)
		}
		if call.err == nil {
			ok++
			byID[call.id] = append(byID[call.id], call)
			continue
		}
		kind := spotsErrKind(call.err)
		if kind == "busy" { // which store answer ended the claim
			switch msg := call.err.Error(); {
			case strings.Contains(msg, "MOVED"):
				kind = "busy(MOVED)"
			case strings.Contains(msg, "not confirmed by a replica"):
				kind = "busy(unconfirmed)"
			}
		}
		if errs[kind]++; errs[kind] == 1 {
			sample[kind] = fmt.Sprintf("%s %v after the failover: %v", call.id, call.done.Sub(failAt).Round(time.Millisecond), call.err)
		}
		if call.done.After(lastErr) {
			lastErr = call.done
		}
		switch {
		case kind == "untyped":
			t.Errorf("%s: untyped error %v", call.id, call.err)
		case !onM[call.id]:
			t.Errorf("%s (record on another master): %v", call.id, call.err)
		case call.done.Before(failAt):
			t.Errorf("%s: failed before the failover: %v", call.id, call.err)
		}
	}
	for _, id := range ids {
		checkClusterReplies(t, id, byID[id])
	}

	// The Spots on other masters kept their first activation; those on M
	// moved to a higher epoch.
	for _, id := range ids {
		b, a := before[id], after[id]
		if a.err != nil {
			t.Errorf("%s: last call: %v", id, a.err)
			continue
		}
		eps := acts.of(id)
		if !onM[id] {
			if a.owner != b.owner || a.epoch != b.epoch || len(eps) != 1 {
				t.Errorf("%s (record on another master) disturbed: %s@%d before, %s@%d after, activations %v",
					id, b.owner, b.epoch, a.owner, a.epoch, eps)
			}
			continue
		}
		if a.epoch <= b.epoch {
			t.Errorf("%s (record on M): epoch %d after the failover, %d before", id, a.epoch, b.epoch)
		}
		if len(eps) < 2 {
			t.Errorf("%s (record on M): activations %v, want the first and one after the fencing", id, eps)
		}
	}
	acts.checkOnePerEpoch(t)

	// The records moved with their slots: M's are on the promoted replica
	// now, and every record names the owner and epoch that answered last.
	now := slices.Clone(masters)
	now[mi] = replica
	moved := spotMasters(t, clusterSlotMap(t, now), prefix, ids)
	dir := clusterSpotDir(t, c, prefix)
	for _, id := range ids {
		if moved[id] != where[id] {
			t.Errorf("%s: record on master #%d before, #%d after", id, where[id], moved[id])
		}
		if a := after[id]; a.err == nil {
			if rec := spotRecord(t, dir, id); rec.OwnerRID != a.owner || rec.Epoch != a.epoch {
				t.Errorf("%s: record %s@%d, last answered by %s@%d", id, rec.OwnerRID, rec.Epoch, a.owner, a.epoch)
			}
		}
	}

	// Stats: one incarnation change per owner of Spots on M, and exactly
	// those Spots fenced.
	var fenced uint64
	statLine := ""
	for _, s := range servers {
		st := spotsStats(t, s)
		fenced += st.Fenced
		statLine += fmt.Sprintf(" %s: owned %d on M, incarnations %d, fenced %d, overlaps %d;",
			s.RID(), ownsOnM[s.RID()], st.StoreIncarnations, st.Fenced, st.Overlaps)
		// The node's lease rode out the failover (even on M): no new
		// generation, which would have fenced every Spot of the node.
		if st.LeaseGeneration != gens[s.RID()] || !st.LeaseValid {
			t.Errorf("%s: lease generation %d (valid %v) after the failover, %d before", s.RID(), st.LeaseGeneration, st.LeaseValid, gens[s.RID()])
		}
		want := uint64(0)
		if ownsOnM[s.RID()] > 0 {
			want = 1
		}
		if st.StoreIncarnations != want {
			t.Errorf("%s owned %d Spots on M and saw %d incarnation changes, want %d", s.RID(), ownsOnM[s.RID()], st.StoreIncarnations, want)
		}
		if st.Overlaps != 0 {
			t.Errorf("%s: %d overlaps", s.RID(), st.Overlaps)
		}
	}
	if fenced != uint64(len(onM)) {
		t.Errorf("%d activations fenced, want the %d Spots on M", fenced, len(onM))
	}

	var rec []time.Duration
	for id := range onM {
		rec = append(rec, load.recoveredAt(id).Sub(failAt))
	}
	window := "none"
	if !lastErr.IsZero() {
		window = lastErr.Sub(failAt).Round(time.Millisecond).String()
	}
	t.Logf("cluster with a replica up in %v; M = %s (run_id %.8s → %.8s), %d of %d Spots on it, leases on M: %v",
		clusterUp.Round(time.Millisecond), m.Addr(), mRunID, rRunID, len(onM), spots, leasesOnM)
	t.Logf("failover: replica master after %v, old master a replica after %v; every owner saw the change after %v; all Spots on M back after %v; re-answered under a higher epoch: %s; last failed call %s after the failover",
		promoted.Round(time.Millisecond), demoted.Round(time.Millisecond), seenInc.Round(time.Millisecond), allBack.Round(time.Millisecond), durStats(rec), window)
	t.Logf("%d calls, %d answered, errors %v;%s", len(calls), ok, errs, strings.TrimSuffix(statLine, ";"))
	for kind, e := range sample {
		t.Logf("first %s: %s", kind, e)
	}
}

// parallel runs f on every id from workers goroutines and waits.
func parallel(ids []string, workers int, f func(id string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				f(id)
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// knowsReplicaOf reports whether node's CLUSTER NODES lists node id as a
// replica of master id.
func knowsReplicaOf(t *testing.T, node *locationtest.RedisServer, id, master string) bool {
	t.Helper()
	for _, line := range strings.Split(node.Command(t, "CLUSTER", "NODES"), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == id {
			return strings.Contains(f[2], "slave") && f[3] == master
		}
	}
	return false
}

// infoValue returns field of INFO section on node.
func infoValue(t *testing.T, node *locationtest.RedisServer, section, field string) string {
	t.Helper()
	for _, l := range strings.Split(node.Command(t, "INFO", section), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}

// checkClusterReplies is checkSpotReplies on one Spot's cluster calls.
func checkClusterReplies(t *testing.T, id string, rs []clusterCall) {
	t.Helper()
	recs := make([]spotsCallRec, len(rs))
	for i, r := range rs {
		recs[i] = r.spotsCallRec
	}
	checkSpotReplies(t, id, recs)
}

// clusterLoad is parallel callers adding 1 to random Spots through one
// node until stopped (at the latest after a minute), every call in the
// ledger.
type clusterLoad struct {
	quit chan struct{}
	once sync.Once
	done chan struct{}

	mu          sync.Mutex
	answered    int
	failoverAt  time.Time
	was         map[string]uint64      // per Spot, the epoch it answered under before the failover
	recoveredOn map[string]clusterCall // first reply under a higher epoch to a call issued after the failover
	markAt      time.Time
	okMark      int
}

func startClusterLoad(ledger *clusterLedger, n *routemesh.Node, ids []string, workers int, callTimeout time.Duration) *clusterLoad {
	l := &clusterLoad{quit: make(chan struct{}), done: make(chan struct{}), recoveredOn: map[string]clusterCall{}}
	end := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
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
				l.record(ledger.call(n, ids[rand.IntN(len(ids))], callTimeout))
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

func (l *clusterLoad) record(c clusterCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.err != nil {
		return
	}
	l.answered++
	if !l.markAt.IsZero() && c.issued.After(l.markAt) {
		l.okMark++
	}
	if !l.failoverAt.IsZero() && c.issued.After(l.failoverAt) && c.epoch > l.was[c.id] {
		if _, ok := l.recoveredOn[c.id]; !ok {
			l.recoveredOn[c.id] = c
		}
	}
}

// markFailover notes when the failover completed and each Spot's epoch
// before it: replies to calls issued later under a higher epoch count
// toward recovered.
func (l *clusterLoad) markFailover(at time.Time, was map[string]uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failoverAt, l.was = at, was
}

// recovered counts the Spots of ids answered under a higher epoch to a
// call issued after the failover.
func (l *clusterLoad) recovered(ids map[string]bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for id := range ids {
		if _, ok := l.recoveredOn[id]; ok {
			n++
		}
	}
	return n
}

// recoveredAt is when id was first answered under a higher epoch to a
// call issued after the failover.
func (l *clusterLoad) recoveredAt(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveredOn[id].done
}

func (l *clusterLoad) ok() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answered
}

// mark starts counting the calls answered that were issued from now on.
func (l *clusterLoad) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markAt, l.okMark = time.Now(), 0
}

func (l *clusterLoad) okSinceMark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.okMark
}

// stop ends the load and waits for the calls in flight: false if one has
// not ended within 10 s.
func (l *clusterLoad) stop() bool {
	l.once.Do(func() { close(l.quit) })
	select {
	case <-l.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}
