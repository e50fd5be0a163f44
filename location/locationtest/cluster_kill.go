package locationtest

import (
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
	if err := c.FailMaster(master, replica); err != nil {
		t.Fatal(err)
	}
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
