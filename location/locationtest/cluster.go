package locationtest

import (
	"context"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterMasters is the number of masters StartRedisCluster starts.
const ClusterMasters = 3

// clusterTimeout bounds creating a cluster and waiting for every node to
// report cluster_state:ok.
const clusterTimeout = 30 * time.Second

// RedisCluster is a real Redis Cluster of ClusterMasters masters, each a
// redis-server child process on a free 127.0.0.1 port, with the 16384
// slots spread over them by redis-cli --cluster create. It has no replicas
// unless AddReplica adds some.
type RedisCluster struct {
	cli      string // redis-cli
	nodes    []*RedisServer
	replicas []*RedisServer // added by AddReplica
}

// StartRedisCluster starts ClusterMasters cluster-enabled redis-servers
// (no persistence; the cluster bus on another free port), joins them with
// `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`,
// waits until CLUSTER INFO says cluster_state:ok with every slot assigned
// on every node, and stops them at test cleanup. It fails (never skips)
// when redis-server or redis-cli is missing. It takes 1 to 3 seconds
// (redis-cli polls the join once a second): share one cluster between
// tests, each with its own key prefix.
func StartRedisCluster(t testing.TB) *RedisCluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found in PATH (%v): run `make test`, which installs it, or `apt-get install -y redis-tools`", err)
	}
	c := &RedisCluster{cli: cli}
	for range ClusterMasters {
		c.nodes = append(c.nodes, startClusterNode(t))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	c.redisCLI(t, append(args, "--cluster-replicas", "0", "--cluster-yes")...)
	c.waitOK(t)
	return c
}

// startClusterNode starts a cluster-enabled redis-server whose cluster bus
// listens on another free port (kept across Restart).
func startClusterNode(t testing.TB) *RedisServer {
	t.Helper()
	bus := 0
	return startRedis(t, nil, func(port int) []string {
		if bus == 0 {
			var err error
			if bus, err = freePort(); err != nil {
				t.Fatalf("locationtest: pick a free port: %v", err)
			}
		}
		return []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
			"--cluster-port", strconv.Itoa(bus)}
	})
}

func (c *RedisCluster) redisCLI(t testing.TB, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, c.cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("locationtest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitOK waits until every node, replicas included, reports
// cluster_state:ok, every slot assigned and every node known.
func (c *RedisCluster) waitOK(t testing.TB) {
	t.Helper()
	all := append(slices.Clone(c.nodes), c.replicas...)
	waitUntil(t, clusterTimeout, "cluster_state:ok on every node", func() bool {
		for _, n := range all {
			info, err := command(n.Addr(), nil, "CLUSTER", "INFO")
			if err != nil || infoField(info, "cluster_state") != "ok" ||
				infoField(info, "cluster_slots_assigned") != "16384" ||
				infoField(info, "cluster_known_nodes") != strconv.Itoa(len(all)) {
				return false
			}
		}
		return true
	})
}

// AddReplica starts a cluster-enabled redis-server, joins it to the
// cluster as a replica of master (redis-cli --cluster add-node
// --cluster-slave), and waits until its replication link is up and every
// node knows it. Stop it to see master lose its replica.
func (c *RedisCluster) AddReplica(t testing.TB, master *RedisServer) *RedisServer {
	t.Helper()
	id := master.Command(t, "CLUSTER", "MYID")
	master.Command(t, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	r := startClusterNode(t)
	c.replicas = append(c.replicas, r)
	c.redisCLI(t, "--cluster", "add-node", r.Addr(), master.Addr(), "--cluster-slave", "--cluster-master-id", id)
	r.WaitReplicaLink(t, master)
	c.waitOK(t)
	return r
}

// Nodes returns the masters, in the order of their slot ranges (the first
// holds slot 0), without the replicas AddReplica added.
func (c *RedisCluster) Nodes() []*RedisServer { return c.nodes }

// Addrs returns host:port of every node.
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// URL returns redis://FIRST?addr=SECOND&addr=THIRD, the cluster form of
// location.ParseRedisURL.
func (c *RedisCluster) URL() string {
	q := url.Values{"addr": c.Addrs()[1:]}
	return "redis://" + c.nodes[0].Addr() + "?" + q.Encode()
}
