package main

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// descBuiltin counts what zlink-node's built-in handlers handled; every
// other metric comes from the admin API's /metrics, as for any embedder.
var descBuiltin = prometheus.NewDesc("zlink_builtin_handled_total",
	"Messages handled by the built-in handlers, by channel and packet (echo includes sleep).", []string{"mesh", "channel", "packet"}, nil)

// builtinCollector reports the built-in handlers' counters of every mesh
// (admin.Options.Collectors).
type builtinCollector map[string]*builtins // mesh → its handlers

func (c builtinCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descBuiltin }

func (c builtinCollector) Collect(ch chan<- prometheus.Metric) {
	for mesh, bi := range c {
		for k, v := range bi.counters() {
			packet, channel, _ := strings.Cut(k, ":")
			ch <- prometheus.MustNewConstMetric(descBuiltin, prometheus.CounterValue, float64(v), mesh, channel, packet)
		}
	}
}

// counters returns the built-in counters of mesh for /status
// (admin.Options.Counters).
func (c builtinCollector) counters(mesh string) map[string]uint64 {
	if bi := c[mesh]; bi != nil {
		return bi.counters()
	}
	return nil
}
