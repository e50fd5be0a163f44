package test

// Helpers for the Spot tests on a real Redis Cluster: nodes whose Location
// Store is a cluster client of their own, the masters' slot ranges read
// from CLUSTER NODES, where a Spot's record lives, and a ledger of calls.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

// clusterKeyPrefix numbers the key prefixes of the cluster tests (one per
// test, shared by its nodes).
var clusterKeyPrefix atomic.Int64

func newClusterKeyPrefix() string { return fmt.Sprintf("zc%d", clusterKeyPrefix.Add(1)) }

// clusterStore opens a Location Store of its own on the cluster c (as a
// separate process would), through the cluster URL, with key prefix
// prefix. It re-reads the masters' replicas often, so writes to a master
// promoted by a failover wait for its replica (or stop waiting) soon. It
// closes at cleanup.
func clusterStore(t *testing.T, c *locationtest.RedisCluster, prefix string) location.Store {
	t.Helper()
	cfg, err := location.ParseRedisURL(c.URL())
	if err != nil {
		t.Fatalf("cluster url %s: %v", c.URL(), err)
	}
	cfg.Prefix = prefix
	cfg.PollInterval = 100 * time.Millisecond
	cfg.DialTimeout = time.Second
	cfg.OpTimeout = 2 * time.Second
	cfg.ReplicaTimeout = 500 * time.Millisecond
	cfg.ReplicaRefresh = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, cfg)
	if err != nil {
		t.Fatalf("cluster store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// clusterSpotDir is a Spot directory of the test's own on the cluster, to
// read the records behind the nodes' backs.
func clusterSpotDir(t *testing.T, c *locationtest.RedisCluster, prefix string) location.SpotDirectory {
	t.Helper()
	s := clusterStore(t, c, prefix)
	d, ok := s.(location.SpotDirectory)
	if !ok {
		t.Fatalf("the store %T keeps no Spot directory", s)
	}
	return d
}

// spotsClusterNode starts an automatic MeshNode of autoMesh with the Spot
// runtime, on a cluster store of its own (key prefix keyPrefix), with RID
// prefix ridPrefix. It stops at cleanup.
func spotsClusterNode(t *testing.T, c *locationtest.RedisCluster, keyPrefix, ridPrefix string, role routemesh.ObjectRole, cfg spot.Config, kinds ...spot.Registration) *routemesh.Node {
	t.Helper()
	o := zlink.NewOptions().SetLocationStore(clusterStore(t, c, keyPrefix))
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(ridPrefix).ConfigureLiveness(spotsLiveness).
		ConfigureDiscovery(fastDiscovery).SetObjectRole(role)
	spot.EnableWith(b, cfg, kinds...)
	return startHost(t, o).Mesh(autoMesh)
}

// slotRange is an inclusive range of cluster slots.
type slotRange struct{ from, to int }

// ownSlots returns the slot ranges node serves as a master, from the
// "myself" line of its CLUSTER NODES (none when it is a replica).
func ownSlots(t *testing.T, node *locationtest.RedisServer) []slotRange {
	t.Helper()
	for _, line := range strings.Split(node.Command(t, "CLUSTER", "NODES"), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		if !strings.Contains(f[2], "master") {
			return nil
		}
		var out []slotRange
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") { // a slot being imported or migrated
				continue
			}
			a, b, found := strings.Cut(s, "-")
			from, err1 := strconv.Atoi(a)
			to, err2 := from, error(nil)
			if found {
				to, err2 = strconv.Atoi(b)
			}
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: CLUSTER NODES slot %q in %q", node.Addr(), s, line)
			}
			out = append(out, slotRange{from, to})
		}
		return out
	}
	t.Fatalf("%s: no myself line in CLUSTER NODES", node.Addr())
	return nil
}

// slotMap says which master serves each slot.
type slotMap struct {
	masters []*locationtest.RedisServer
	ranges  [][]slotRange // per master
}

// clusterSlotMap reads the slot ranges of masters, which must cover every
// slot exactly once.
func clusterSlotMap(t *testing.T, masters []*locationtest.RedisServer) *slotMap {
	t.Helper()
	m := &slotMap{masters: masters}
	n := 0
	for _, node := range masters {
		rs := ownSlots(t, node)
		for _, r := range rs {
			n += r.to - r.from + 1
		}
		m.ranges = append(m.ranges, rs)
	}
	if n != 16384 {
		t.Fatalf("the masters serve %d slots, want 16384: %v", n, m.ranges)
	}
	return m
}

// master returns the index (in masters) of the master serving slot.
func (m *slotMap) master(t *testing.T, slot int) int {
	t.Helper()
	for i, rs := range m.ranges {
		for _, r := range rs {
			if r.from <= slot && slot <= r.to {
				return i
			}
		}
	}
	t.Fatalf("slot %d served by no master: %v", slot, m.ranges)
	return -1
}

// keySlot asks node for the cluster slot of key (CLUSTER KEYSLOT).
func keySlot(t *testing.T, node *locationtest.RedisServer, key string) int {
	t.Helper()
	s, err := strconv.Atoi(node.Command(t, "CLUSTER", "KEYSLOT", key))
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	return s
}

// spotRecordKey is the key of a counter Spot's ownership record.
func spotRecordKey(prefix, id string) string {
	return prefix + ":{spot:" + autoMesh + ":" + spotsKindName + ":" + id + "}"
}

// spotMasters returns, per Spot ID, the index of the master holding its
// record, each checked there (EXISTS on the master that serves its slot;
// any other would answer MOVED and fail the test).
func spotMasters(t *testing.T, m *slotMap, prefix string, ids []string) map[string]int {
	t.Helper()
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		key := spotRecordKey(prefix, id)
		i := m.master(t, keySlot(t, m.masters[0], key))
		if got := m.masters[i].Command(t, "EXISTS", key); got != "1" {
			t.Fatalf("spot %s: record %s not on %s, the master of its slot (EXISTS %s)", id, key, m.masters[i].Addr(), got)
		}
		out[id] = i
	}
	return out
}

// spotsPerMaster counts Spot records per master index.
func spotsPerMaster(where map[string]int, masters int) []int {
	out := make([]int, masters)
	for _, i := range where {
		out[i]++
	}
	return out
}

// clusterCall is one Spot call as it ended.
type clusterCall struct {
	seq uint64
	spotsCallRec
}

// clusterLedger accounts for every call: begin opens it, end closes it;
// ending a call twice, or one never begun, is recorded as a violation, and
// calls still open at the end are listed by check.
type clusterLedger struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]string // seq → Spot ID
	calls  []clusterCall
	ends   map[uint64]int
	broken []string
}

func newClusterLedger() *clusterLedger {
	return &clusterLedger{open: map[uint64]string{}, ends: map[uint64]int{}}
}

func (l *clusterLedger) begin(id string) clusterCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.open[l.next] = id
	return clusterCall{seq: l.next, spotsCallRec: spotsCallRec{id: id, issued: time.Now()}}
}

func (l *clusterLedger) end(c clusterCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends[c.seq]++
	if _, ok := l.open[c.seq]; !ok {
		l.broken = append(l.broken, fmt.Sprintf("call %d (%s) ended %d times", c.seq, c.id, l.ends[c.seq]))
		return
	}
	delete(l.open, c.seq)
	l.calls = append(l.calls, c)
}

// call makes one counter call through n, accounted in the ledger.
func (l *clusterLedger) call(n *routemesh.Node, id string, timeout time.Duration) clusterCall {
	c := l.begin(id)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	var res spot.Result
	c.value, res, c.err = spotsAddCall(ctx, n, id, 1)
	cancel()
	c.done = time.Now()
	c.owner, c.epoch = res.Owner, res.Epoch
	l.end(c)
	return c
}

// check fails the test unless every begun call ended exactly once, and
// returns the ended calls in the order they ended.
func (l *clusterLedger) check(t *testing.T) []clusterCall {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.broken {
		t.Error(b)
	}
	if len(l.open) > 0 {
		t.Errorf("%d calls begun never ended", len(l.open))
	}
	if uint64(len(l.calls)) != l.next {
		t.Errorf("%d calls begun, %d ended", l.next, len(l.calls))
	}
	return append([]clusterCall(nil), l.calls...)
}

// durStats formats min / median / max of ds.
func durStats(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %v, median %v, max %v", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}
