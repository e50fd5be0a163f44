package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/metrics"
)

// collector is the runtime's collector (package metrics) of the API's
// host, read on every scrape of /metrics.
func (a *API) collector() prometheus.Collector {
	return metrics.New(func() *zlink.Host { return a.host.Load() }, metrics.Config{})
}
