// Package locationtest holds the conformance suite every location.Store
// implementation must pass (Run: descriptors, publishers, Watch, and the
// Spot directory's leases and records) and test harnesses, all real
// processes:
//
//   - StartRedis: a redis-server child process on a free loopback port,
//     restartable on the same port; StartRedisTLS the same speaking TLS
//     only, with certificates made at test time (GenerateCerts; Debian's
//     redis-server is built with TLS).
//   - StartRedisReplica: a second redis-server replicating a StartRedis
//     server (--replicaof), returned once it acknowledges writes; Stop it
//     to take the master's replica away.
//   - StartRedisCluster: a 3-master Redis Cluster joined by
//     `redis-cli --cluster create`, returned once every node reports
//     cluster_state:ok; RedisCluster.URL is its location.ParseRedisURL
//     form and AddReplica gives one master a replica; KillMaster kills
//     that master and has its replica take over.
//   - LaunchRedis and RedisServer.Start: the same redis-server outside a
//     test (for harnesses such as `zlink-node bench faults`).
//   - RedisServer.Command: one command to a server, bypassing the client
//     under test (to inspect or corrupt what it stored).
//   - FakeClock for the in-memory store, and condition-wait helpers
//     (WaitFor, NextEvent).
//
// Tests never skip because redis-server or redis-cli is missing: the
// harness fails the test with the reason (`make test` installs them). This
// package is imported only by tests and by the fault harness (test/fault,
// which `zlink-node bench faults` uses); it must not touch anything
// outside the stores and servers under test.
package locationtest
