package test

// Helpers for automatic topology tests: automatic nodes on a Location
// Store, Redis stores on a real redis-server, and an automatic node in a
// child process that can be killed without a goodbye.

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
)

const autoMesh = "game"

// fastDiscovery: short leases and polls so expiry and convergence are quick.
var fastDiscovery = routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second}

func init() {
	if os.Getenv("ZLINK_AUTO_CHILD") == "1" {
		runAutoChild()
	}
}

// redisStore starts a redis-server and a Redis store on it; both end at
// cleanup (the store first).
func redisStore(t *testing.T) (*locationtest.RedisServer, location.Store) {
	t.Helper()
	srv := locationtest.StartRedis(t)
	return srv, openRedis(t, srv.Addr())
}

func openRedis(t *testing.T, addr string) location.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr, PollInterval: 100 * time.Millisecond,
		DialTimeout: time.Second, OpTimeout: time.Second})
	if err != nil {
		t.Fatalf("redis store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// autoNode starts an automatic MeshNode of autoMesh with RID prefix prefix.
func autoNode(t *testing.T, store location.Store, prefix string, setup func(*routemesh.MeshBuilder)) *routemesh.Node {
	t.Helper()
	o := zlink.NewOptions().SetLocationStore(store)
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery)
	if setup != nil {
		setup(b)
	}
	return startHost(t, o).Mesh(autoMesh)
}

// readyPeers returns the RIDs node n shows Ready.
func readyPeers(t *testing.T, n *routemesh.Node) map[string]routemesh.PeerStatus {
	t.Helper()
	out := map[string]routemesh.PeerStatus{}
	for _, p := range status(t, n).Peers {
		if p.State == routemesh.PeerReady {
			out[p.RID] = p
		}
	}
	return out
}

// waitFullMesh waits until every node shows every other one Ready.
func waitFullMesh(t *testing.T, nodes ...*routemesh.Node) {
	t.Helper()
	waitFor(t, "full mesh", 15*time.Second, func() bool {
		for _, n := range nodes {
			r := readyPeers(t, n)
			for _, m := range nodes {
				if m != n {
					if _, ok := r[m.RID()]; !ok {
						return false
					}
				}
			}
		}
		return true
	})
}

// waitRounds waits until n has finished k more discovery rounds.
func waitRounds(t *testing.T, n *routemesh.Node, k uint64) {
	t.Helper()
	start := status(t, n).Counters["discovery_rounds"]
	waitFor(t, fmt.Sprintf("%d discovery rounds on %s", k, n.RID()), 10*time.Second, func() bool {
		return status(t, n).Counters["discovery_rounds"] >= start+k
	})
}

func descriptorOf(t *testing.T, s location.Store, rid string) (location.Descriptor, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.GetDescriptor(ctx, autoMesh, rid)
}

// runAutoChild runs an automatic node (prefix $ZLINK_AUTO_PREFIX) on the
// Redis at $ZLINK_AUTO_REDIS, prints "READY <rid> <endpoint>" and runs
// until killed or until stdin closes.
func runAutoChild() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	store, err := location.NewRedis(ctx, location.RedisConfig{Addr: os.Getenv("ZLINK_AUTO_REDIS"), PollInterval: 100 * time.Millisecond})
	if err != nil {
		childFail(err)
	}
	o := zlink.NewOptions().SetLogger(zerolog.Nop()).SetLocationStore(store)
	o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(os.Getenv("ZLINK_AUTO_PREFIX")).
		ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).HandleDirectRequest("echo", echo)
	h, err := zlink.Start(ctx, o)
	cancel()
	if err != nil {
		childFail(err)
	}
	childServe(h.Mesh(autoMesh))
}

// startAutoChild starts an automatic node in a child process and returns
// it with its RID. It is killed at cleanup.
func startAutoChild(t *testing.T, redisAddr, prefix string) (*childNode, string) {
	t.Helper()
	return startRIDChild(t, "auto child", "ZLINK_AUTO_CHILD=1", "ZLINK_AUTO_REDIS="+redisAddr, "ZLINK_AUTO_PREFIX="+prefix)
}
