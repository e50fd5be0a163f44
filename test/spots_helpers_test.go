package test

// Helpers for the Spot integration tests: Object Servers and Clients on a
// real redis-server over real sockets, a counter kind that records every
// activation per (ID, epoch), and an Object Server in a child process that
// can be SIGKILLed.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// spotsKindName is the counter kind of these tests.
const spotsKindName = "counter"

// spotsAdd adds N to the counter and returns the new value.
var spotsAdd = wire.NewPacket[int64, int64]("add")

// spotsFast is a short ownership lease: a killed owner's Spots are
// claimable about a second after its last renewal.
var spotsFast = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}

// spotsCounter is one counter Spot's state.
type spotsCounter struct{ N int64 }

// spotsActivations records every activation of the counter kind by
// (ID, epoch), with the node that ran it (OnActivate).
type spotsActivations struct {
	mu sync.Mutex
	m  map[string]map[uint64][]string // id → epoch → RIDs that activated it
	n  int
}

func newSpotsActivations() *spotsActivations {
	return &spotsActivations{m: map[string]map[uint64][]string{}}
}

func (a *spotsActivations) record(c *spot.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[c.ID] == nil {
		a.m[c.ID] = map[uint64][]string{}
	}
	a.m[c.ID][c.Epoch] = append(a.m[c.ID][c.Epoch], c.Node.RID())
	a.n++
}

// total is the number of activations recorded.
func (a *spotsActivations) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// of returns id's activations: epoch → RIDs.
func (a *spotsActivations) of(id string) map[uint64][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[uint64][]string{}
	for e, rids := range a.m[id] {
		out[e] = append([]string(nil), rids...)
	}
	return out
}

// checkOnePerEpoch fails the test for any (ID, epoch) activated more than
// once (twice on one node, or on two nodes).
func (a *spotsActivations) checkOnePerEpoch(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	bad := 0
	for id, eps := range a.m {
		for e, rids := range eps {
			if len(rids) != 1 {
				bad++
				if bad <= 10 {
					t.Errorf("spot %s epoch %d activated %d times: %v", id, e, len(rids), rids)
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("… %d (ID, epoch) pairs activated more than once in all", bad)
	}
}

// spotsKind is the counter kind; acts (nil: none) records activations.
func spotsKind(acts *spotsActivations) *spot.Kind[spotsCounter] {
	k := spot.NewKind(spotsKindName, func(string) *spotsCounter { return &spotsCounter{} })
	spot.On(k, spotsAdd, func(_ *spot.Context, s *spotsCounter, n int64) (int64, error) { s.N += n; return s.N, nil })
	if acts != nil {
		k.OnActivate(func(c *spot.Context, _ *spotsCounter) error { acts.record(c); return nil })
	}
	return k
}

// spotsAddCall adds n to Spot id through node from and says who answered.
func spotsAddCall(ctx context.Context, from *routemesh.Node, id string, n int64) (int64, spot.Result, error) {
	b, err := spotsAdd.EncodeRequest(n)
	if err != nil {
		return 0, spot.Result{}, err
	}
	out, res, err := spot.CallRaw(ctx, from, spotsKindName, id, spotsAdd.Name(), b)
	if err != nil {
		return 0, res, err
	}
	v, err := spotsAdd.DecodeReply(out)
	return v, res, err
}

// spotsLiveness notices a dead peer within a second, yet rides out the
// scheduling stalls of a loaded, race-instrumented test process (the
// 250 ms of fastLiveness does not).
var spotsLiveness = routemesh.LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 5, LastHeard: time.Second}

// spotsNode starts an automatic MeshNode of autoMesh with the Spot runtime
// on its own connection to the Redis at addr (as a separate process would
// have), with spotsLiveness. An Object Client passes no kinds. It stops at
// cleanup.
func spotsNode(t *testing.T, addr, prefix string, role routemesh.ObjectRole, cfg spot.Config, kinds ...spot.Registration) (*zlink.Host, *routemesh.Node) {
	t.Helper()
	return spotsNodeLive(t, addr, prefix, role, cfg, spotsLiveness, kinds...)
}

// spotsNodeLive is spotsNode with liveness settings.
func spotsNodeLive(t *testing.T, addr, prefix string, role routemesh.ObjectRole, cfg spot.Config, live routemesh.LivenessConfig, kinds ...spot.Registration) (*zlink.Host, *routemesh.Node) {
	t.Helper()
	store := openRedis(t, addr)
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(live).
		ConfigureDiscovery(fastDiscovery).SetObjectRole(role)
	spot.EnableWith(b, cfg, kinds...)
	h := startHost(t, o)
	return h, h.Mesh(autoMesh)
}

// spotsReady waits until every node sees every other one as a ready peer
// and can serve Spot calls (a ready Object Server known for placement;
// on an Object Server, its own lease valid).
func spotsReady(t *testing.T, nodes ...*routemesh.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := n.WaitPeers(ctxT(t, 15*time.Second), len(nodes)-1); err != nil {
			t.Fatalf("%s: peers: %v", n.RID(), err)
		}
	}
	for _, n := range nodes {
		if err := spot.WaitReady(ctxT(t, 15*time.Second), n); err != nil {
			t.Fatalf("%s: %v", n.RID(), err)
		}
	}
}

// spotsServersKnown waits until node n would place Spots on every one of
// rids (each a ready, non-draining peer).
func spotsServersKnown(t *testing.T, n *routemesh.Node, rids ...string) {
	t.Helper()
	waitFor(t, n.RID()+" sees every Object Server ready", 15*time.Second, func() bool {
		for _, rid := range rids {
			if ready, draining := n.PeerReady(rid); !ready || draining {
				return false
			}
		}
		return true
	})
}

// spotsRedis starts a redis-server for the test and returns its address
// and the Spot directory of a store of the test's own on it (to read and
// tamper with records behind the nodes' backs). Both end at cleanup.
func spotsRedis(t *testing.T) (string, location.SpotDirectory) {
	t.Helper()
	srv, s := redisStore(t)
	d, ok := s.(location.SpotDirectory)
	if !ok {
		t.Fatalf("the store %T keeps no Spot directory", s)
	}
	return srv.Addr(), d
}

// spotRecord reads a Spot's ownership record from the master.
func spotRecord(t *testing.T, d location.SpotDirectory, id string) location.Ownership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := d.SpotRecord(ctx, autoMesh, spotsKindName, id)
	if err != nil {
		t.Fatalf("spot record %s: %v", id, err)
	}
	return rec
}

// spotsStats returns a node's Spot stats or fails the test.
func spotsStats(t *testing.T, n *routemesh.Node) spot.Stats {
	t.Helper()
	st, err := spot.StatsOf(n)
	if err != nil {
		t.Fatalf("%s: spot stats: %v", n.RID(), err)
	}
	return st
}

// spotsActive is how many counter Spots are active on n.
func spotsActive(t *testing.T, n *routemesh.Node) int64 {
	t.Helper()
	for _, k := range spotsStats(t, n).Kinds {
		if k.Kind == spotsKindName {
			return k.Active
		}
	}
	return 0
}

// spread formats owner → count, sorted, for messages.
func spread(per map[string]int) string {
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%d", k, per[k])
	}
	return s
}

// The child Object Server: the test binary re-executed with
// ZLINK_SPOTS_CHILD=1 runs it instead of the tests.
func init() {
	if os.Getenv("ZLINK_SPOTS_CHILD") == "1" {
		runSpotsChild()
	}
}

// runSpotsChild runs an automatic Object Server (prefix
// $ZLINK_SPOTS_PREFIX) hosting the counter kind with the short lease, on
// the Redis at $ZLINK_SPOTS_REDIS. Once it can serve Spots it prints
// "READY <rid> <endpoint>"; it runs until killed or until stdin closes.
func runSpotsChild() {
	log := zerolog.Nop()
	if os.Getenv("ZLINK_TEST_LOG") != "" {
		log = zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Int("pid", os.Getpid()).Logger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	store, err := location.NewRedis(ctx, location.RedisConfig{Addr: os.Getenv("ZLINK_SPOTS_REDIS"), PollInterval: 100 * time.Millisecond,
		DialTimeout: time.Second, OpTimeout: time.Second})
	if err != nil {
		childFail(err)
	}
	o := zlink.NewOptions().SetLogger(log).SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(os.Getenv("ZLINK_SPOTS_PREFIX")).
		ConfigureLiveness(spotsLiveness).ConfigureDiscovery(fastDiscovery).SetObjectRole(routemesh.ObjectServer)
	spot.EnableWith(b, spotsFast, spotsKind(nil))
	h, err := zlink.Start(ctx, o)
	if err == nil {
		err = spot.WaitReady(ctx, h.Mesh(autoMesh))
	}
	cancel()
	if err != nil {
		childFail(err)
	}
	childServe(h.Mesh(autoMesh))
}

// startSpotsChild starts the child Object Server and returns it with its
// RID. It is killed at cleanup.
func startSpotsChild(t *testing.T, redisAddr, prefix string) (*childNode, string) {
	t.Helper()
	return startRIDChild(t, "spots child", "ZLINK_SPOTS_CHILD=1", "ZLINK_SPOTS_REDIS="+redisAddr, "ZLINK_SPOTS_PREFIX="+prefix)
}
