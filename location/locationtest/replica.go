package locationtest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartRedisReplica starts a redis-server replicating master (plain TCP
// only) on a free 127.0.0.1 port, waits until the replication link is up
// (the replica reports master_link_status:up and the master counts it in
// connected_slaves) and stops it at test cleanup. Stop it to see the
// master lose its replica; Restart brings it back (it syncs again).
func StartRedisReplica(t testing.TB, master *RedisServer) *RedisServer {
	t.Helper()
	if master.tls != nil {
		t.Fatal("locationtest: StartRedisReplica of a TLS server is not supported")
	}
	// Sync at once rather than after the default 5 s wait for more
	// replicas.
	master.Command(t, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
	r := startRedis(t, nil, func(int) []string {
		return []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.port)}
	})
	r.WaitReplicaLink(t, master)
	return r
}

// WaitReplicaLink waits until this replica's link to master is up, the
// master lists it as online and it acknowledges a write (a PUBLISH, which
// is replicated, then WAIT 1), failing after startTimeout.
func (s *RedisServer) WaitReplicaLink(t testing.TB, master *RedisServer) {
	t.Helper()
	online := "port=" + strconv.Itoa(s.port) + ",state=online,"
	waitUntil(t, startTimeout, "replica "+s.Addr()+" online at "+master.Addr(), func() bool {
		info, err := command(s.Addr(), s.clientTLS, "INFO", "replication")
		if err != nil || infoField(info, "master_link_status") != "up" {
			return false
		}
		info, err = command(master.Addr(), master.clientTLS, "INFO", "replication")
		if err != nil || !strings.Contains(info, online) {
			return false
		}
		r, err := commands(master.Addr(), master.clientTLS,
			[]string{"PUBLISH", "locationtest:replica-probe", "x"}, []string{"WAIT", "1", "1000"})
		return err == nil && r[1] != "0"
	})
}

// waitUntil polls cond every 10ms until it holds, failing after timeout.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("locationtest: timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
