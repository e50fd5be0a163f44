package main

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/metrics"
)

// descBuiltin counts what zlink-node's built-in handlers handled; every
// other metric comes from the metrics package, as for any embedder.
var descBuiltin = prometheus.NewDesc("zlink_builtin_handled_total",
	"Messages handled by the built-in handlers, by channel and packet (echo includes sleep).", []string{"mesh", "channel", "packet"}, nil)

// newCollector is the runtime's collector plus the built-in handlers'
// counters.
func newCollector(a *app) prometheus.Collector {
	return metrics.New(func() *zlink.Host { return a.host.Load() }, metrics.Config{
		ExtraDescs: []*prometheus.Desc{descBuiltin},
		Extra: func(mesh string, ch chan<- prometheus.Metric) {
			bi := a.bis[mesh]
			if bi == nil {
				return
			}
			for k, v := range bi.counters() {
				packet, channel, _ := strings.Cut(k, ":")
				ch <- prometheus.MustNewConstMetric(descBuiltin, prometheus.CounterValue, float64(v), mesh, channel, packet)
			}
		},
	})
}
