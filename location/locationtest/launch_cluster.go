package locationtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LaunchRedisCluster starts a cluster like StartRedisCluster, outside a
// test: dir holds the servers' files and the caller stops them (Close).
// It is for harnesses without a testing.TB, such as `zlink-node bench
// faults`.
func LaunchRedisCluster(dir string) (c *RedisCluster, err error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("redis-cli not found in PATH (%w): `make deps` installs it", err)
	}
	c = &RedisCluster{cli: cli}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for i := range ClusterMasters {
		n, err := launchClusterNode(filepath.Join(dir, "m"+strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	if err := c.cliE(append(args, "--cluster-replicas", "0", "--cluster-yes")...); err != nil {
		return nil, err
	}
	return c, c.waitOKE()
}

// LaunchReplica is AddReplica outside a test; Close stops the replica
// too.
func (c *RedisCluster) LaunchReplica(master *RedisServer) (*RedisServer, error) {
	id, err := command(master.Addr(), nil, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	if _, err := command(master.Addr(), nil, "CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
		return nil, err
	}
	r, err := launchClusterNode(filepath.Join(master.dir, "replica-"+strconv.Itoa(len(c.replicas))))
	if err != nil {
		return nil, err
	}
	c.replicas = append(c.replicas, r)
	if err := c.cliE("--cluster", "add-node", r.Addr(), master.Addr(), "--cluster-slave", "--cluster-master-id", id); err != nil {
		return nil, err
	}
	online := "port=" + strconv.Itoa(r.port) + ",state=online,"
	if err := waitUntilE(startTimeout, "replica "+r.Addr()+" online", func() bool {
		info, err := command(r.Addr(), nil, "INFO", "replication")
		if err != nil || infoField(info, "master_link_status") != "up" {
			return false
		}
		info, err = command(master.Addr(), nil, "INFO", "replication")
		return err == nil && strings.Contains(info, online)
	}); err != nil {
		return nil, err
	}
	if err := c.waitOKE(); err != nil {
		return nil, err
	}
	// Every master must know it as master's replica, or one would deny it
	// the promotion.
	rid, err := command(r.Addr(), nil, "CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	return r, waitUntilE(clusterTimeout, "every master to know the replica", func() bool {
		for _, n := range c.nodes {
			nodes, err := command(n.Addr(), nil, "CLUSTER", "NODES")
			if err != nil || !listsReplica(nodes, rid, id) {
				return false
			}
		}
		return true
	})
}

// FailMaster is KillMaster outside a test.
func (c *RedisCluster) FailMaster(master, replica *RedisServer) error {
	i := slices.Index(c.nodes, master)
	j := slices.Index(c.replicas, replica)
	if i < 0 || j < 0 {
		return fmt.Errorf("locationtest: %s is not a master or %s not a replica of this cluster", master.Addr(), replica.Addr())
	}
	master.Stop()
	if _, err := command(replica.Addr(), nil, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
		return err
	}
	c.nodes[i] = replica
	c.replicas = slices.Delete(c.replicas, j, j+1)
	return waitUntilE(clusterTimeout, "replica "+replica.Addr()+" promoted", func() bool {
		info, err := command(replica.Addr(), nil, "INFO", "replication")
		if err != nil || infoField(info, "role") != "master" {
			return false
		}
		for _, n := range c.nodes {
			info, err := command(n.Addr(), nil, "CLUSTER", "INFO")
			if err != nil || infoField(info, "cluster_state") != "ok" || infoField(info, "cluster_slots_assigned") != "16384" {
				return false
			}
			nodes, err := command(n.Addr(), nil, "CLUSTER", "NODES")
			if err != nil || !servesSlots(nodes, replica.Addr()) {
				return false
			}
		}
		return true
	})
}

// Close stops every server of the cluster, replicas included.
func (c *RedisCluster) Close() {
	for _, n := range append(slices.Clone(c.nodes), c.replicas...) {
		n.Stop()
	}
}

// listsReplica says whether the CLUSTER NODES text lists node id as a
// replica of master id.
func listsReplica(nodes, id, master string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == id && strings.Contains(f[2], "slave") && f[3] == master {
			return true
		}
	}
	return false
}

// launchClusterNode is startClusterNode outside a test, its files in dir.
func launchClusterNode(dir string) (*RedisServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found in PATH (%w): `make deps` installs it", err)
	}
	bus, err := freePort() // the cluster bus, kept across restarts
	if err != nil {
		return nil, err
	}
	s := &RedisServer{bin: bin, dir: dir}
	s.extra = func(port int) []string {
		return []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
			"--cluster-port", strconv.Itoa(bus)}
	}
	var lastErr error
	for range 3 {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("locationtest: start redis-server: %w", lastErr)
}

func (c *RedisCluster) cliE(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, c.cli, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("locationtest: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *RedisCluster) waitOKE() error {
	all := append(slices.Clone(c.nodes), c.replicas...)
	return waitUntilE(clusterTimeout, "cluster_state:ok on every node", func() bool {
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

var errTimedOut = errors.New("locationtest: timed out")

// waitUntilE polls cond every 10ms until it holds, or fails after timeout.
func waitUntilE(timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v waiting for %s", errTimedOut, timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
