package metrics

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/supervisor"
)

// Config tunes a Collector. Zero fields take their defaults.
type Config struct {
	// ScrapeTimeout bounds the status requests of one scrape. Default 2 s.
	ScrapeTimeout time.Duration
	// Extra, when set, adds metrics of the caller's own for each mesh on
	// every scrape (described by ExtraDescs). It must not block.
	Extra      func(mesh string, ch chan<- prometheus.Metric)
	ExtraDescs []*prometheus.Desc
}

var (
	descCalls = prometheus.NewDesc("zlink_calls_total",
		"Calls started by this MeshNode (select-one, multicast members, Node-direct).", []string{"mesh"}, nil)
	descOK = prometheus.NewDesc("zlink_calls_ok_total",
		"Calls that ended with a reply.", []string{"mesh"}, nil)
	descErrors = prometheus.NewDesc("zlink_call_errors_total",
		"Calls that ended with an error, by wire error kind (busy, timeout, no_target, …).", []string{"mesh", "kind"}, nil)
	descLatency = prometheus.NewDesc("zlink_call_latency_seconds",
		"Latency of select-one calls started by this MeshNode.", []string{"mesh"}, nil)
	descPeers = prometheus.NewDesc("zlink_peers",
		"Peers by monitoring state (Connecting, Ready, NotConnected, NotRequired, Draining).", []string{"mesh", "state"}, nil)
	descState = prometheus.NewDesc("zlink_node_state",
		"1 for the MeshNode's current lifecycle state.", []string{"mesh", "state"}, nil)
	descInflight = prometheus.NewDesc("zlink_inflight",
		"Admitted inbound messages not yet handled.", []string{"mesh"}, nil)
	descWeight = prometheus.NewDesc("zlink_channel_weight",
		"Current Server weight of each Server channel.", []string{"mesh", "channel"}, nil)
	descRuntime = prometheus.NewDesc("zlink_runtime_events_total",
		"Runtime event counters: protocol_errors, late_frames, handshake_rejects, connections_refused (inbound connections refused before their handshake), peers_lost (without a goodbye), peers_departed (clean departures).", []string{"mesh", "event"}, nil)
	descActors = prometheus.NewDesc("zlink_actors",
		"Live supervised actors by kind.", []string{"kind"}, nil)
	descDepth = prometheus.NewDesc("zlink_mailbox_depth",
		"Messages queued in the mailboxes of the actors of each kind.", []string{"kind"}, nil)
	descBytes = prometheus.NewDesc("zlink_mailbox_bytes",
		"Bytes queued in the mailboxes of the actors of each kind.", []string{"kind"}, nil)
	descRestarts = prometheus.NewDesc("zlink_actor_restarts",
		"Restarts of the live actors of each kind (an actor that stops takes its count with it).", []string{"kind"}, nil)
	descSpotsActive = prometheus.NewDesc("zlink_spots_active",
		"Spots active on this MeshNode, by Spot kind.", []string{"mesh", "spot_kind"}, nil)
	descSpotActivations = prometheus.NewDesc("zlink_spot_activations_total",
		"Spot activations on this MeshNode, by Spot kind.", []string{"mesh", "spot_kind"}, nil)
	descSpotDeactivations = prometheus.NewDesc("zlink_spot_deactivations_total",
		"Spot deactivations on this MeshNode (idle, drain, stop, fenced, moved away), by Spot kind.", []string{"mesh", "spot_kind"}, nil)
	descSpotTurns = prometheus.NewDesc("zlink_spot_turns_total",
		"Spot turns on this MeshNode, by Spot kind, packet (registered names; _reply for OnReply turns, anything else _unknown), source (request, send, reply, timer) and result (ok or the error kind).", []string{"mesh", "spot_kind", "packet", "source", "result"}, nil)
	descSpotEvents = prometheus.NewDesc("zlink_spot_events_total",
		"Spot runtime events: redirects, fenced, overlaps, store_incarnations, saves, save_errors, moves, move_waits, rebalanced, sends_dropped, not_hosted, state_rereads, async_abandoned.", []string{"mesh", "event"}, nil)
)

// What a node served, per handler scope (channel "" is Node direct) and
// packet: only packets with a registered handler are labels, every other
// name is counted as packet="_unknown".
var (
	descServerRequests = prometheus.NewDesc("zlink_server_requests_total",
		"Requests this MeshNode answered as a server, by channel, packet and result (ok or the error kind).", []string{"mesh", "channel", "packet", "result"}, nil)
	descServerSends = prometheus.NewDesc("zlink_server_sends_total",
		"One-way messages this MeshNode handled, by channel and packet.", []string{"mesh", "channel", "packet"}, nil)
	descServerDuration = prometheus.NewDesc("zlink_server_request_duration_seconds",
		"Run time of the handlers of this MeshNode (requests and one-way messages), by channel and packet.", []string{"mesh", "channel", "packet"}, nil)
	descServerQueued = prometheus.NewDesc("zlink_server_queue_seconds",
		"Time from a message's arrival to its handler's start, by channel and packet.", []string{"mesh", "channel", "packet"}, nil)
	descServerRunning = prometheus.NewDesc("zlink_server_handlers_running",
		"Handlers running now, by channel.", []string{"mesh", "channel"}, nil)
)

var serverDescs = []*prometheus.Desc{descServerRequests, descServerSends, descServerDuration, descServerQueued, descServerRunning}

var runtimeEvents = []string{"protocol_errors", "late_frames", "handshake_rejects", "connections_refused", "peers_lost", "peers_departed"}

var peerStates = []routemesh.PeerState{
	routemesh.PeerConnecting, routemesh.PeerReady, routemesh.PeerNotConnected,
	routemesh.PeerNotRequired, routemesh.PeerDraining,
}

var nodeStates = []routemesh.NodeState{
	routemesh.NodeStarting, routemesh.NodeReady, routemesh.NodeDraining,
	routemesh.NodeStopping, routemesh.NodeStopped, routemesh.NodeFailed,
}

// Collector reads a Host's status and tree on every scrape.
type Collector struct {
	host func() *zlink.Host
	cfg  Config
}

var _ prometheus.Collector = (*Collector)(nil)

// For returns the collector of h with the default Config.
func For(h *zlink.Host) *Collector { return New(func() *zlink.Host { return h }, Config{}) }

// New returns a collector of the Host host returns at each scrape (nil:
// nothing to report yet, e.g. before Start).
func New(host func() *zlink.Host, cfg Config) *Collector {
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = 2 * time.Second
	}
	return &Collector{host: host, cfg: cfg}
}

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descOK, descErrors, descLatency, descPeers, descState,
		descInflight, descWeight, descRuntime, descActors, descDepth, descBytes, descRestarts,
		descSpotsActive, descSpotActivations, descSpotDeactivations, descSpotTurns, descSpotEvents} {
		ch <- d
	}
	for _, d := range serverDescs {
		ch <- d
	}
	for _, d := range c.cfg.ExtraDescs {
		ch <- d
	}
}

// Collect reads a fresh snapshot of every mesh and of the tree.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	h := c.host()
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ScrapeTimeout)
	defer cancel()
	for _, n := range h.Meshes() {
		st, err := n.Status(ctx)
		if err != nil && st.Mesh == "" {
			continue
		}
		collectStatus(ch, st)
		if ss, err := spot.StatsOf(n); err == nil {
			collectSpots(ch, st.Mesh, ss)
		}
		if c.cfg.Extra != nil {
			c.cfg.Extra(st.Mesh, ch)
		}
	}
	collectKinds(ch, h.Tree())
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
		ch <- prometheus.MustNewConstHistogram(descLatency, count, st.LatencySum.Seconds(), buckets, m)
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
	collectServed(ch, m, st.Served)
}

// collectServed reports what the node served (the server side of calls).
func collectServed(ch chan<- prometheus.Metric, m string, served []routemesh.ServedStatus) {
	for _, s := range served {
		ch <- prometheus.MustNewConstMetric(descServerRunning, prometheus.GaugeValue, float64(s.Running), m, s.Channel)
		for _, p := range s.Packets {
			for result, v := range p.Requests {
				ch <- prometheus.MustNewConstMetric(descServerRequests, prometheus.CounterValue, float64(v), m, s.Channel, p.Packet, result)
			}
			ch <- prometheus.MustNewConstMetric(descServerSends, prometheus.CounterValue, float64(p.Sends), m, s.Channel, p.Packet)
			if buckets, count, ok := latencyBuckets(p.Latency); ok {
				ch <- prometheus.MustNewConstHistogram(descServerDuration, count, p.LatencySum.Seconds(), buckets, m, s.Channel, p.Packet)
			}
			if buckets, count, ok := latencyBuckets(p.Queued); ok {
				ch <- prometheus.MustNewConstHistogram(descServerQueued, count, p.QueuedSum.Seconds(), buckets, m, s.Channel, p.Packet)
			}
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

type kindTotals struct{ actors, depth, bytes, restarts float64 }

// collectKinds sums the tree per actor kind (the root, the system itself,
// is left out).
func collectKinds(ch chan<- prometheus.Metric, root supervisor.Node) {
	totals := map[string]*kindTotals{}
	var walk func(n supervisor.Node)
	walk = func(n supervisor.Node) {
		if n.Path != supervisor.RootPath {
			t := totals[n.Kind]
			if t == nil {
				t = &kindTotals{}
				totals[n.Kind] = t
			}
			t.actors++
			t.depth += float64(n.Mailbox.Depth)
			t.bytes += float64(n.Mailbox.Bytes)
			t.restarts += float64(n.Restarts)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	kinds := make([]string, 0, len(totals))
	for k := range totals {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t := totals[k]
		ch <- prometheus.MustNewConstMetric(descActors, prometheus.GaugeValue, t.actors, k)
		ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, t.depth, k)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, t.bytes, k)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.GaugeValue, t.restarts, k)
	}
}

// collectSpots reports a node's Spot runtime (labels: mesh and kind names,
// configuration values only).
func collectSpots(ch chan<- prometheus.Metric, mesh string, ss spot.Stats) {
	for _, k := range ss.Kinds {
		ch <- prometheus.MustNewConstMetric(descSpotsActive, prometheus.GaugeValue, float64(k.Active), mesh, k.Kind)
		ch <- prometheus.MustNewConstMetric(descSpotActivations, prometheus.CounterValue, float64(k.Activations), mesh, k.Kind)
		ch <- prometheus.MustNewConstMetric(descSpotDeactivations, prometheus.CounterValue, float64(k.Deactivations), mesh, k.Kind)
		for _, tc := range k.Turns {
			ch <- prometheus.MustNewConstMetric(descSpotTurns, prometheus.CounterValue, float64(tc.Count), mesh, k.Kind, tc.Packet, tc.Source, tc.Result)
		}
	}
	for ev, v := range map[string]uint64{
		"redirects": ss.Redirects, "fenced": ss.Fenced, "overlaps": ss.Overlaps,
		"store_incarnations": ss.StoreIncarnations, "saves": ss.Saves, "save_errors": ss.SaveErrors,
		"moves": ss.Moves, "move_waits": ss.MoveWaits, "rebalanced": ss.Rebalanced, "sends_dropped": ss.SendsDropped,
		"not_hosted": ss.NotHosted, "state_rereads": ss.StateRereads, "async_abandoned": ss.AsyncAbandoned,
	} {
		ch <- prometheus.MustNewConstMetric(descSpotEvents, prometheus.CounterValue, float64(v), mesh, ev)
	}
}
