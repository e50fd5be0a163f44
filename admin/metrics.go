package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/metrics"
)

// collectors are the runtime's collector (package metrics) of the API's
// host and the Location Store's counters, read on every scrape of
// /metrics.
func (a *API) collectors() []prometheus.Collector {
	host := func() *zlink.Host { return a.host.Load() }
	return []prometheus.Collector{metrics.New(host, metrics.Config{}), storeCollector{host: host}}
}
