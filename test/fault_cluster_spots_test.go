package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

// TestFault_ClusterMasterKilledSpotsReclaimed: two Object Servers and an
// Object Client on a real 3-master Redis Cluster whose master M (holding
// the mesh's descriptors) has a replica; parallel callers on a hundred
// counter Spots, about a third of whose records live on M. M is killed
// (SIGKILL) and its replica takes over. Then:
//   - the owners of Spots on M see its incarnation change and fence them,
//     and each of those Spots answers again under a higher epoch (Spot
//     claims continue after the promotion);
//   - every call ended once, with a reply or a typed error;
//   - no activation answered after a newer one of the same Spot did, no
//     epoch was answered by two owners, and each (Spot, epoch) was
//     activated once: the records survived (replicated before the claims
//     returned), so epochs keep increasing across the failover;
//   - overlaps the runtime saw are counted in its stats (logged).
func TestFault_ClusterMasterKilledSpotsReclaimed(t *testing.T) {
	t.Cleanup(func() { waitNoGoroutine(t, "rueidis.(*call).DelayDo", 10*time.Second) })
	const (
		spots       = 96
		workers     = 8
		callTimeout = 3 * time.Second
	)
	c := locationtest.StartRedisCluster(t)
	masters := c.Nodes()
	slots := clusterSlotMap(t, masters)
	mi := slots.master(t, keySlot(t, masters[0], "{mesh:"+autoMesh+"}"))
	m := masters[mi]
	replica := c.AddReplica(t, m)
	mID, rID := m.Command(t, "CLUSTER", "MYID"), replica.Command(t, "CLUSTER", "MYID")
	waitFor(t, "every master to know the replica as M's", 15*time.Second, func() bool {
		for _, x := range masters {
			if !knowsReplicaOf(t, x, rID, mID) {
				return false
			}
		}
		return true
	})
	// Once promoted, the replica has no replica of its own to confirm
	// writes: it stops waiting for one soon (clusterStore).
	prefix := newClusterKeyPrefix()
	acts := newSpotsActivations()
	a := spotsClusterNode(t, c, prefix, "osA", routemesh.ObjectServer, spotsFailoverCfg, spotsKind(acts))
	b := spotsClusterNode(t, c, prefix, "osB", routemesh.ObjectServer, spotsFailoverCfg, spotsKind(acts))
	client := spotsClusterNode(t, c, prefix, "oc", routemesh.ObjectClient, spotsFailoverCfg)
	spotsReady(t, a, b, client)
	spotsServersKnown(t, client, a.RID(), b.RID())
	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("ck-%d", i)
	}
	load := startSpotsLoad(client, ids, workers, callTimeout)
	defer load.stop()
	waitFor(t, "every Spot answered", 20*time.Second, func() bool { n, _ := load.answered(""); return n == spots })

	// Which Spots live on M, who owns them, under which epoch.
	where := spotMasters(t, slots, prefix, ids)
	onM := map[string]uint64{}
	owners := map[string]bool{}
	for _, id := range ids {
		if where[id] == mi {
			last := load.lastReply(id)
			onM[id], owners[last.owner] = last.epoch, true
		}
	}
	if len(onM) == 0 || len(onM) == spots {
		t.Fatalf("%d of %d Spots on M: want some, not all", len(onM), spots)
	}

	killAt := time.Now()
	c.KillMaster(t, m, replica)
	promoted := time.Since(killAt)
	// The owners of Spots on M see its incarnation change and fence them;
	// the next calls claim them again under a higher epoch.
	waitFor(t, "every owner of Spots on M seeing the new incarnation", 15*time.Second, func() bool {
		for _, n := range []*routemesh.Node{a, b} {
			if owners[n.RID()] && spotsStats(t, n).StoreIncarnations == 0 {
				return false
			}
		}
		return true
	})
	seen := time.Since(killAt)
	waitFor(t, "every Spot on M answering under a higher epoch", 30*time.Second, func() bool {
		for id, e := range onM {
			if last := load.lastReply(id); last.epoch <= e {
				return false
			}
		}
		return true
	})
	back := time.Since(killAt)
	load.mark()
	waitFor(t, "more calls answered after the recovery", 10*time.Second, func() bool { return load.okSinceMark() >= 2*spots })
	if !load.stop() {
		t.Fatal("a call did not end within 10 s of its deadline")
	}

	calls := load.snapshot()
	if int64(len(calls)) != load.issued.Load() {
		t.Fatalf("%d calls issued, %d ended", load.issued.Load(), len(calls))
	}
	errs := map[string]int{}
	byID := map[string][]spotsCallRec{}
	for _, call := range calls {
		if call.err != nil {
			kind := spotsErrKind(call.err)
			errs[kind]++
			if kind == "untyped" {
				t.Errorf("%s: untyped error %v", call.id, call.err)
			}
			continue
		}
		byID[call.id] = append(byID[call.id], call)
	}
	for _, id := range ids {
		checkSpotReplies(t, id, byID[id])
	}
	acts.checkOnePerEpoch(t)
	stA, stB := spotsStats(t, a), spotsStats(t, b)
	if fenced := stA.Fenced + stB.Fenced; fenced < uint64(len(onM)) {
		t.Errorf("%d activations fenced, fewer than the %d Spots on M", fenced, len(onM))
	}
	t.Logf("%d calls, errors %v; master %s killed, replica promoted in %v; owners saw it %v after the kill; the %d Spots on M answered under a higher epoch %v after the kill; fenced %d+%d, overlaps counted %d+%d, store incarnations seen %d+%d",
		len(calls), errs, m.Addr(), promoted.Round(time.Millisecond), seen.Round(time.Millisecond), len(onM), back.Round(time.Millisecond),
		stA.Fenced, stB.Fenced, stA.Overlaps, stB.Overlaps, stA.StoreIncarnations, stB.StoreIncarnations)
}

// lastReply is the latest reply received from Spot id.
func (l *spotsLoad) lastReply(id string) spotsCallRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[id]
}
