package main

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// scrapeTimeout bounds the Status calls of one scrape.
const scrapeTimeout = 2 * time.Second

var (
	descCalls = prometheus.NewDesc("zlink_calls_total",
		"Calls started by this MeshNode (select-one, multicast members, Node-direct).", []string{"mesh"}, nil)
	descOK = prometheus.NewDesc("zlink_calls_ok_total",
		"Calls that ended with a reply.", []string{"mesh"}, nil)
	descErrors = prometheus.NewDesc("zlink_call_errors_total",
		"Calls that ended with an error, by wire error kind (busy, timeout, no_target, …).", []string{"mesh", "kind"}, nil)
	descLatency = prometheus.NewDesc("zlink_call_latency_seconds",
		"Latency of select-one calls. The sum is not exported by the runtime and is always 0.", []string{"mesh"}, nil)
	descPeers = prometheus.NewDesc("zlink_peers",
		"Peers by monitoring state (Connecting, Ready, NotConnected, NotRequired, Draining).", []string{"mesh", "state"}, nil)
	descState = prometheus.NewDesc("zlink_node_state",
		"1 for the MeshNode's current lifecycle state.", []string{"mesh", "state"}, nil)
	descInflight = prometheus.NewDesc("zlink_inflight",
		"Admitted inbound messages not yet handled.", []string{"mesh"}, nil)
	descWeight = prometheus.NewDesc("zlink_channel_weight",
		"Current Server weight of each Server channel.", []string{"mesh", "channel"}, nil)
	descRuntime = prometheus.NewDesc("zlink_runtime_events_total",
		"Runtime event counters: protocol_errors, late_frames, handshake_rejects, peers_lost (without a goodbye), peers_departed (clean departures).", []string{"mesh", "event"}, nil)
	descBuiltin = prometheus.NewDesc("zlink_builtin_handled_total",
		"Messages handled by the built-in handlers, by channel and packet (echo includes sleep).", []string{"mesh", "channel", "packet"}, nil)
	descDepth = prometheus.NewDesc("zlink_mailbox_depth",
		"Messages queued in each actor's mailbox.", []string{"path", "kind"}, nil)
	descBytes = prometheus.NewDesc("zlink_mailbox_bytes",
		"Bytes queued in each actor's mailbox.", []string{"path", "kind"}, nil)
	descRestarts = prometheus.NewDesc("zlink_actor_restarts_total",
		"Restarts of each supervised actor.", []string{"path", "kind"}, nil)
)

var runtimeEvents = []string{"protocol_errors", "late_frames", "handshake_rejects", "peers_lost", "peers_departed"}

var peerStates = []routemesh.PeerState{
	routemesh.PeerConnecting, routemesh.PeerReady, routemesh.PeerNotConnected,
	routemesh.PeerNotRequired, routemesh.PeerDraining,
}

var nodeStates = []routemesh.NodeState{
	routemesh.NodeStarting, routemesh.NodeReady, routemesh.NodeDraining,
	routemesh.NodeStopping, routemesh.NodeStopped, routemesh.NodeFailed,
}

// collector reads Status and the tree on every scrape; it keeps no state.
type collector struct{ a *app }

var _ prometheus.Collector = (*collector)(nil)

func newCollector(a *app) *collector { return &collector{a: a} }

// Describe sends every descriptor.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descOK, descErrors, descLatency, descPeers, descState,
		descInflight, descWeight, descRuntime, descBuiltin, descDepth, descBytes, descRestarts} {
		ch <- d
	}
}

// Collect reads a fresh snapshot of every mesh and of the tree.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	h := c.a.host.Load()
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, n := range h.Meshes() {
		st, err := n.Status(ctx)
		if err != nil {
			continue
		}
		collectStatus(ch, st)
		if bi := c.a.bis[st.Mesh]; bi != nil {
			for k, v := range bi.counters() {
				packet, channel, _ := strings.Cut(k, ":")
				ch <- prometheus.MustNewConstMetric(descBuiltin, prometheus.CounterValue, float64(v), st.Mesh, channel, packet)
			}
		}
	}
	collectTree(ch, h.Tree())
}

func collectStatus(ch chan<- prometheus.Metric, st routemesh.Status) {
	m := st.Mesh
	ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(st.Counters["calls"]), m)
	ch <- prometheus.MustNewConstMetric(descOK, prometheus.CounterValue, float64(st.Counters["ok"]), m)
	for k, v := range st.Counters {
		if kind, ok := strings.CutPrefix(k, "errors_"); ok {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(v), m, kind)
		}
	}
	for _, ev := range runtimeEvents {
		ch <- prometheus.MustNewConstMetric(descRuntime, prometheus.CounterValue, float64(st.Counters[ev]), m, ev)
	}
	if buckets, count, ok := latencyBuckets(st.Latency); ok {
		ch <- prometheus.MustNewConstHistogram(descLatency, count, 0, buckets, m)
	}
	for _, ps := range peerStates {
		ch <- prometheus.MustNewConstMetric(descPeers, prometheus.GaugeValue, float64(st.CountPeers(ps)), m, ps.String())
	}
	for _, ns := range nodeStates {
		v := 0.0
		if st.State == ns {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, m, ns.String())
	}
	ch <- prometheus.MustNewConstMetric(descInflight, prometheus.GaugeValue, float64(st.Inflight), m)
	for _, c := range st.Channels {
		if c.Role == routemesh.RoleServer.String() {
			ch <- prometheus.MustNewConstMetric(descWeight, prometheus.GaugeValue, float64(c.Weight), m, c.Name)
		}
	}
}

// latencyBuckets turns the runtime's per-bucket counts (LE as a Go
// duration, last "+Inf") into Prometheus cumulative buckets in seconds.
func latencyBuckets(lb []routemesh.LatencyBucket) (map[float64]uint64, uint64, bool) {
	if len(lb) == 0 {
		return nil, 0, false
	}
	out := make(map[float64]uint64, len(lb))
	var cum uint64
	for _, b := range lb {
		cum += b.Count
		if b.LE == "+Inf" {
			continue
		}
		d, err := time.ParseDuration(b.LE)
		if err != nil {
			return nil, 0, false
		}
		out[d.Seconds()] = cum
	}
	return out, cum, true
}

func collectTree(ch chan<- prometheus.Metric, n supervisor.Node) {
	ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(n.Mailbox.Depth), n.Path, n.Kind)
	ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(n.Mailbox.Bytes), n.Path, n.Kind)
	ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(n.Restarts), n.Path, n.Kind)
	for _, c := range n.Children {
		collectTree(ch, c)
	}
}
