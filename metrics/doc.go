// Package metrics exposes the runtime metrics of a running zlink.Host as a
// Prometheus collector that any application registers on its own
// registry; `zlink-node` serves the same collector at /metrics.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics.For(host))
//
// Per MeshNode: calls, replies and errors by typed kind, the call latency
// histogram (with its sum), peers by state, the lifecycle state, admitted
// work, Server weights and runtime events. Per actor kind: actors, mailbox
// depth and bytes, restarts. Labels carry configuration values only —
// MeshName, ChannelName, actor kind, states, error kinds — never a RID or
// an actor path, so short-lived peers and clients create no new series.
//
// It reads the Host's public status and tree on every scrape and keeps no
// state; it must not touch the runtime otherwise.
package metrics
