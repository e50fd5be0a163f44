package locationtest

import (
	"slices"
	"strings"
	"testing"
)

// KillMaster kills master like a crash (SIGKILL, no persistence) and has
// replica, which AddReplica made its replica, take over its slots with
// CLUSTER FAILOVER TAKEOVER: the promotion a node timeout would bring,
// without waiting out the timeout or for the other masters' votes. It
// returns once the replica serves slots as a master and it and every
// other master report cluster_state:ok with every slot assigned. The
// replica then stands in master's place in Nodes, Addrs and URL; the
// killed master is not restarted.
func (c *RedisCluster) KillMaster(t testing.TB, master, replica *RedisServer) {
	t.Helper()
	i := slices.Index(c.nodes, master)
	j := slices.Index(c.replicas, replica)
	if i < 0 || j < 0 {
		t.Fatalf("locationtest: KillMaster: %s is not a master or %s not a replica of this cluster", master.Addr(), replica.Addr())
	}
	master.Stop()
	replica.Command(t, "CLUSTER", "FAILOVER", "TAKEOVER")
	c.nodes[i] = replica
	c.replicas = slices.Delete(c.replicas, j, j+1)
	waitUntil(t, clusterTimeout, "replica "+replica.Addr()+" promoted", func() bool {
		info, err := command(replica.Addr(), nil, "INFO", "replication")
		if err != nil || infoField(info, "role") != "master" {
			return false
		}
		for _, n := range c.nodes {
			info, err := command(n.Addr(), nil, "CLUSTER", "INFO")
			if err != nil || infoField(info, "cluster_state") != "ok" || infoField(info, "cluster_slots_assigned") != "16384" {
				return false
			}
			// Every master sees the replica serve master's slots.
			nodes, err := command(n.Addr(), nil, "CLUSTER", "NODES")
			if err != nil || !servesSlots(nodes, replica.Addr()) {
				return false
			}
		}
		return true
	})
}

// servesSlots says whether the CLUSTER NODES text lists addr as a master
// with slots.
func servesSlots(nodes, addr string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && strings.HasPrefix(f[1], addr+"@") && strings.Contains(f[2], "master") {
			return true
		}
	}
	return false
}
