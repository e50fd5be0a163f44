package benchrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// The Redis Cluster scenario for Spots: the master holding the records of
// some of the Spots under load, with a replica, killed. The owners of those
// Spots see the shard's new incarnation and fence them; the next calls
// claim them again under a higher epoch.

// faultClusterSpotsConfig: a longer lease than faultSpotsConfig, so the
// renewals of Spots on the other masters ride out the promotion (the
// promoted replica has no replica of its own to confirm writes until the
// store stops waiting for one).
var faultClusterSpotsConfig = spot.Config{LeaseTTL: 4 * time.Second, RenewEvery: 500 * time.Millisecond, Margin: 500 * time.Millisecond}

// faultClusterSpots is how many Spots the scenario calls: enough that every
// master holds the records of some.
const faultClusterSpots = 96

// spotRecordKey is the key of Spot id's record in the cluster store
// (clusterStore's prefix, the fault mesh, the bench kind).
func spotRecordKey(id string) string {
	return "faults:{spot:" + faultMesh + ":" + spotsKind + ":" + id + "}"
}

// spotsOn lists the Spots whose record master m holds: it answers EXISTS
// on them, where any other master answers MOVED.
func spotsOn(m *locationtest.RedisServer, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		n, err := m.Do("EXISTS", spotRecordKey(id))
		switch {
		case err != nil && strings.Contains(err.Error(), "MOVED"):
		case err != nil:
			return nil, err
		case n == "1":
			out = append(out, id)
		}
	}
	return out, nil
}

// maxEpoch is the highest epoch Spot id has answered under.
func (s *spotsTrack) maxEpoch(id string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var e uint64
	for k := range s.epochs[id] {
		e = max(e, k)
	}
	return e
}

func runClusterMasterKillSpots(ctx context.Context, r *faultRig, _ bool) (out faultOutcome, err error) {
	c, m, replica, err := faultClusterWithReplica(r)
	if err != nil {
		return out, err
	}
	spotsNode := func(prefix string, role routemesh.ObjectRole, kinds ...spot.Registration) (*routemesh.Node, error) {
		store, err := clusterStore(r, c)
		if err != nil {
			return nil, err
		}
		return faultSpotsNode(r, store, faultClusterSpotsConfig, prefix, role, kinds...)
	}
	a, err := spotsNode("osA", routemesh.ObjectServer, spotsBenchKind())
	if err != nil {
		return out, err
	}
	b, err := spotsNode("osB", routemesh.ObjectServer, spotsBenchKind())
	if err != nil {
		return out, err
	}
	cl, err := spotsNode("oc", routemesh.ObjectClient)
	if err != nil {
		return out, err
	}
	if err := waitPeersReady(ctx, "the client knowing both Object Servers", cl, a.RID(), b.RID()); err != nil {
		return out, err
	}
	ids := spotIDs("ck", faultClusterSpots)
	tr := newSpotsTrack()
	out.base, out.heap = baseline()
	out.load = startSpotsFaultLoad(cl, ids, tr)
	if err := waitUntil(ctx, "every Spot answered", 20*time.Second, func() bool {
		_, n := tr.ownedBy("")
		return n == len(ids)
	}); err != nil {
		return out, err
	}
	onM, err := spotsOn(m, ids)
	if err != nil {
		return out, err
	}
	if len(onM) == 0 || len(onM) == len(ids) {
		return out, fmt.Errorf("%d of %d Spot records on the master to kill: want some, not all", len(onM), len(ids))
	}
	before := make(map[string]uint64, len(onM))
	owners := map[string]bool{}
	for _, id := range onM {
		before[id] = tr.maxEpoch(id)
		tr.mu.Lock()
		owners[tr.last[id]] = true
		tr.mu.Unlock()
	}

	killAt := time.Now()
	if err := c.FailMaster(m, replica); err != nil {
		return out, err
	}
	promoted := time.Since(killAt)
	if err := waitUntil(ctx, "every owner of Spots on the killed master seeing the new incarnation", 15*time.Second, func() bool {
		for _, n := range []*routemesh.Node{a, b} {
			st, err := spot.StatsOf(n)
			if owners[n.RID()] && (err != nil || st.StoreIncarnations == 0) {
				return false
			}
		}
		return true
	}); err != nil {
		return out, err
	}
	out.detect = time.Since(killAt)
	if err := waitUntil(ctx, "every Spot on the killed master answering under a higher epoch", 30*time.Second, func() bool {
		for id, e := range before {
			if tr.maxEpoch(id) <= e {
				return false
			}
		}
		return true
	}); err != nil {
		return out, err
	}
	out.recover = time.Since(killAt)
	out.load.Mark()
	if err := waitUntil(ctx, "more calls answered after the recovery", 10*time.Second, func() bool {
		return out.load.Since(a.RID())+out.load.Since(b.RID()) > 2*len(ids)
	}); err != nil {
		return out, err
	}
	out.load.Stop()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.conflicts) > 0 {
		return out, fmt.Errorf("%d (Spot, epoch) answered by two owners, first %s", len(tr.conflicts), tr.conflicts[0])
	}
	var fenced, overlaps uint64
	for _, n := range []*routemesh.Node{a, b} {
		if st, err := spot.StatsOf(n); err == nil {
			fenced, overlaps = fenced+st.Fenced, overlaps+st.Overlaps
		}
	}
	out.note = fmt.Sprintf("spots=%d on_killed_master=%d promoted_in=%v fenced=%d overlaps=%d lease_ttl=%v "+
		"(detect: every owner of Spots on it saw the new incarnation; recover: every Spot on it answered under a higher epoch, both from the kill)",
		len(ids), len(onM), promoted.Round(time.Millisecond), fenced, overlaps, faultClusterSpotsConfig.LeaseTTL)
	return out, nil
}
