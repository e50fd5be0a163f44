package test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// TestSpotsCluster_SpreadAndCalls: three Object Servers and an Object
// Client, each on a Location Store of its own on a real 3-master Redis
// Cluster, call a few hundred counter Spots three times each (rounds from
// the client, from the servers, from the client again; one Spot's calls in
// order, the Spots in parallel). Then:
//   - every call was answered, with the count it made (1, 2, 3) by one
//     owner under one epoch;
//   - each Spot was activated exactly once, and its record names the owner
//     and epoch that answered;
//   - the records spread over all three masters (each checked on the
//     master serving its slot), and the Spots over all three servers.
func TestSpotsCluster_SpreadAndCalls(t *testing.T) {
	t.Parallel()
	const (
		spots       = 300
		workers     = 24
		callTimeout = 10 * time.Second
	)
	start := time.Now()
	c := locationtest.StartRedisCluster(t)
	clusterUp := time.Since(start)
	prefix := newClusterKeyPrefix()
	acts := newSpotsActivations()
	var servers []*routemesh.Node
	for i := range 3 {
		servers = append(servers, spotsClusterNode(t, c, prefix, fmt.Sprintf("os%d", i), routemesh.ObjectServer, spot.Config{}, spotsKind(acts)))
	}
	client := spotsClusterNode(t, c, prefix, "oc", routemesh.ObjectClient, spot.Config{})
	all := append([]*routemesh.Node{client}, servers...)
	spotsReady(t, all...)
	rids := make([]string, len(servers))
	for i, s := range servers {
		rids[i] = s.RID()
	}
	spotsServersKnown(t, client, rids...)
	for _, s := range servers {
		spotsServersKnown(t, s, rids...)
	}
	ready := time.Since(start)

	ids := make([]string, spots)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%d", i)
	}
	ledger := newClusterLedger()
	// Round r of Spot i goes through via(r, i): the client, then the
	// servers in turn, then the client.
	via := func(r, i int) *routemesh.Node {
		if r == 1 {
			return servers[i%len(servers)]
		}
		return client
	}
	callStart := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				for r := range 3 {
					ledger.call(via(r, i), ids[i], callTimeout)
				}
			}
		}()
	}
	for i := range ids {
		work <- i
	}
	close(work)
	wg.Wait()
	callTime := time.Since(callStart)

	calls := ledger.check(t)
	if len(calls) != 3*spots {
		t.Fatalf("%d calls ended, want %d", len(calls), 3*spots)
	}
	type seen struct {
		owner string
		epoch uint64
		n     int64
	}
	per := map[string]*seen{}
	failed := 0
	for _, call := range calls {
		if call.err != nil {
			failed++
			if failed <= 10 {
				t.Errorf("%s: %v (%s)", call.id, call.err, spotsErrKind(call.err))
			}
			continue
		}
		s := per[call.id]
		if s == nil {
			s = &seen{owner: call.owner, epoch: call.epoch}
			per[call.id] = s
		}
		if call.owner != s.owner || call.epoch != s.epoch {
			t.Errorf("%s answered by %s@%d and by %s@%d", call.id, s.owner, s.epoch, call.owner, call.epoch)
		}
		// One Spot's calls run in order: the k-th answer is k.
		if s.n++; call.value != s.n {
			t.Errorf("%s: call %d answered %d", call.id, s.n, call.value)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls failed", failed, len(calls))
	}

	// One activation per Spot, and its record names who answered.
	if n := acts.total(); n != spots {
		t.Errorf("%d activations for %d Spots", n, spots)
	}
	acts.checkOnePerEpoch(t)
	dir := clusterSpotDir(t, c, prefix)
	byOwner := map[string]int{}
	for _, id := range ids {
		s := per[id]
		if eps := acts.of(id); len(eps) != 1 || len(eps[s.epoch]) != 1 || eps[s.epoch][0] != s.owner {
			t.Errorf("%s: activations %v, answered by %s@%d", id, eps, s.owner, s.epoch)
		}
		rec := spotRecord(t, dir, id)
		if rec.OwnerRID != s.owner || rec.Epoch != s.epoch {
			t.Errorf("%s: record %s@%d, answered by %s@%d", id, rec.OwnerRID, rec.Epoch, s.owner, s.epoch)
		}
		byOwner[s.owner]++
	}
	for _, rid := range rids {
		if byOwner[rid] == 0 {
			t.Errorf("server %s owns no Spot:%s", rid, spread(byOwner))
		}
	}

	// The records spread over every master.
	where := spotMasters(t, clusterSlotMap(t, c.Nodes()), prefix, ids)
	perMaster := spotsPerMaster(where, len(c.Nodes()))
	total := 0
	for i, n := range perMaster {
		total += n
		if n == 0 {
			t.Errorf("master %s holds no Spot record: %v", c.Nodes()[i].Addr(), perMaster)
		}
	}
	if total != spots {
		t.Errorf("%d Spot records on the masters, want %d", total, spots)
	}
	dbsize := make([]string, len(c.Nodes()))
	for i, node := range c.Nodes() {
		dbsize[i] = node.Command(t, "DBSIZE")
	}
	t.Logf("cluster up in %v, nodes ready at %v; %d calls to %d Spots in %v; records per master %v (DBSIZE %v); Spots per server:%s",
		clusterUp.Round(time.Millisecond), ready.Round(time.Millisecond), len(calls), spots, callTime.Round(time.Millisecond),
		perMaster, dbsize, spread(byOwner))
}
