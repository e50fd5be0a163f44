// Package fault is the fault harness of the integration tests and of
// `zlink-node bench faults`, usable from test and non-test code alike:
//
//   - Proxy, a TCP proxy of our own placed between two nodes (or a node
//     and its store) that passes traffic, holds it in both directions or
//     in one (a partition, symmetric or asymmetric: bytes wait and are
//     delivered on Heal, as TCP retransmission would), drops it, delays
//     it, throttles it, and resets every connection. Held connections
//     stay open, as they do when a host vanishes or a switch drops a
//     link, so the nodes must notice through their own liveness.
//   - Child, a child process that announces itself with a READY line and
//     can be killed with SIGKILL, frozen (SIGSTOP) and thawed.
//   - Redis and cluster faults on the real servers of
//     location/locationtest: a redis-server stopped and started again on
//     its port, and a Redis Cluster master killed so its replica takes
//     over.
//
// It only ever listens and dials on loopback. The proxy does not know
// about meshes: it moves bytes.
package fault
