package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
)

// StoreStats is what the host's Location Store counts: the "store" of
// GET /status and the zlink_store_* metrics. The counters are those of
// location.RedisStats; an in-memory store has none (kind memory, zeros).
type StoreStats struct {
	// Kind is redis, memory, or other (a store of another type; its
	// counters are read when it has a Stats() location.RedisStats method).
	Kind string `json:"kind"`
	// CorruptRecords counts records read back that did not decode or
	// contradicted their key (each key is logged once, with the logger
	// the store was given).
	CorruptRecords uint64 `json:"corrupt_records"`
	// Errors counts operations the store did not answer as asked
	// (connection, deadline, server error).
	Errors uint64 `json:"errors"`
	// ReplicaWaits and UnconfirmedWrites count Spot directory writes
	// followed by WAIT 1, and those no replica confirmed.
	ReplicaWaits      uint64 `json:"replica_waits"`
	UnconfirmedWrites uint64 `json:"unconfirmed_writes"`
}

// statsReader is a store that counts (location.Redis, or a wrapper of it).
type statsReader interface{ Stats() location.RedisStats }

// storeStats reads the counters of s; nil without a store.
func storeStats(s location.Store) *StoreStats {
	if s == nil {
		return nil
	}
	out := &StoreStats{Kind: "other"}
	switch s.(type) {
	case *location.Redis:
		out.Kind = "redis"
	case *location.Memory:
		out.Kind = "memory"
	}
	if sr, ok := s.(statsReader); ok {
		rs := sr.Stats()
		out.CorruptRecords, out.Errors = rs.CorruptRecords, rs.Errors
		out.ReplicaWaits, out.UnconfirmedWrites = rs.ReplicaWaits, rs.UnconfirmedWrites
	}
	return out
}

// StatusResponse answers GET /status: the MeshNode's routemesh.Status and
// the counters of the host's Location Store (absent without one).
type StatusResponse struct {
	routemesh.Status
	Store *StoreStats `json:"store,omitempty"`
}

var (
	descStoreCorrupt = prometheus.NewDesc("zlink_store_corrupt_records_total",
		"Location Store records read back that did not decode or contradicted their key (Redis).", nil, nil)
	descStoreErrors = prometheus.NewDesc("zlink_store_errors_total",
		"Location Store operations that failed: connection, deadline or server error (Redis).", nil, nil)
	descStoreWaits = prometheus.NewDesc("zlink_store_replica_waits_total",
		"Spot directory writes followed by WAIT 1 for a replica (Redis).", nil, nil)
	descStoreUnconfirmed = prometheus.NewDesc("zlink_store_unconfirmed_writes_total",
		"Spot directory writes no replica confirmed (Redis).", nil, nil)
)

// StoreCollector returns the collector of the zlink_store_* metrics the
// admin API's /metrics serves, for an embedder that registers metrics on
// a registry of its own.
func StoreCollector(host func() *zlink.Host) prometheus.Collector { return storeCollector{host: host} }

// storeCollector reports the host's Location Store counters (one store
// per host, however many meshes; nothing without a store or before the
// host is known, and nothing for a store that does not count).
type storeCollector struct{ host func() *zlink.Host }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStoreCorrupt, descStoreErrors, descStoreWaits, descStoreUnconfirmed} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.host()
	if h == nil || len(h.Meshes()) == 0 {
		return
	}
	sr, ok := h.Meshes()[0].Store().(statsReader)
	if !ok {
		return
	}
	rs := sr.Stats()
	for _, m := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descStoreCorrupt, rs.CorruptRecords}, {descStoreErrors, rs.Errors}, {descStoreWaits, rs.ReplicaWaits}, {descStoreUnconfirmed, rs.UnconfirmedWrites}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
}
