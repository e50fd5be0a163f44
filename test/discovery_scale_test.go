package test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// TestDiscovery_IdleStoreCostPerNodeConstant: an idle mesh of automatic
// Object Servers (the Spot runtime with a kind each: discovery, the store
// watch and the Spot members all follow the mesh) costs Redis as many
// commands per node at 16 nodes as at 4, within a factor of 2, counted by
// the server itself (INFO commandstats, the commands inside scripts
// included). Following the mesh reads its revision and what changed,
// never every descriptor: were each node to list the mesh on every poll,
// a node's cost would grow with the mesh (3× from 4 to 16 nodes here).
// No timing threshold: two rates measured the same way are compared.
func TestDiscovery_IdleStoreCostPerNodeConstant(t *testing.T) {
	perNode := map[int]float64{}
	for _, n := range []int{4, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			perNode[n] = idleCommandsPerNode(t, n)
		})
	}
	if t.Failed() {
		return
	}
	ratio := perNode[16] / perNode[4]
	t.Logf("commands per node per second: %.1f at 4 nodes, %.1f at 16 (ratio %.2f)", perNode[4], perNode[16], ratio)
	if ratio > 2 {
		t.Fatalf("a node's idle store cost grows with the mesh: %.1f commands/s per node at 16 nodes, %.1f at 4 (%.2f×, want ≤ 2×)",
			perNode[16], perNode[4], ratio)
	}
}

// idleCommandsPerNode starts n Object Servers on a redis-server of their
// own, waits until the mesh is formed and every node's view holds all of
// it, then counts Redis commands while every node does 10 more discovery
// rounds, and returns commands per node per second.
func idleCommandsPerNode(t *testing.T, n int) float64 {
	srv := locationtest.StartRedis(t)
	var nodes []*routemesh.Node
	for i := range n {
		_, node := spotsNodeLive(t, srv.Addr(), fmt.Sprintf("s%02d", i), routemesh.ObjectServer, spotsFast, spotsLiveness, spotsKind(nil))
		nodes = append(nodes, node)
	}
	spotsReady(t, nodes...)
	waitFor(t, "every node's view of the whole mesh", 30*time.Second, func() bool {
		for _, node := range nodes {
			if len(node.MeshView().Descriptors) != n {
				return false
			}
		}
		return true
	})
	for _, node := range nodes {
		if err := spot.WaitReady(ctxT(t, 15*time.Second), node); err != nil {
			t.Fatal(err)
		}
	}
	rounds := func() []uint64 {
		out := make([]uint64, len(nodes))
		for i, node := range nodes {
			out[i] = status(t, node).Counters["discovery_rounds"]
		}
		return out
	}
	start := rounds()
	before := srv.Load(t)
	waitFor(t, "10 discovery rounds on every node", 60*time.Second, func() bool {
		for i, r := range rounds() {
			if r < start[i]+10 {
				return false
			}
		}
		return true
	})
	load := srv.Load(t).Sub(before)
	secs := load.At.Sub(before.At).Seconds()
	rate := float64(load.Commands()) / secs / float64(n)
	names := make([]string, 0, len(load.Calls))
	for k := range load.Calls {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%.1f", k, float64(load.Calls[k])/secs/float64(n))
	}
	t.Logf("%d nodes: %.1f commands/s per node over %.1fs:%s", n, rate, secs, b.String())
	return rate
}
