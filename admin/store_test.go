package admin

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// The Location Store's counters show in /status and /metrics: a corrupt
// Spot record read by the owner look-up (500, code corrupt) is counted
// once per read, and logged once by the store.
func TestStore_CorruptRecordsInStatusAndMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log := &syncBuffer{}
	var srv *locationtest.RedisServer
	_, _, url := apiWith(t, Options{}, func(o *zlink.Options) {
		// Started here, after the leak check was registered: stopped
		// before it runs.
		srv = locationtest.StartRedis(t)
		store, err := location.NewRedis(ctx, location.RedisConfig{Addr: srv.Addr(), Logger: testLogger(log)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() }) // after the host stopped, before the leak check
		o.SetLocationStore(store).AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("st")
	})
	var st statusWithStore
	if code := getJSON(t, url+"/status", &st); code != http.StatusOK || st.Store == nil || st.Store.Kind != "redis" || st.Store.CorruptRecords != 0 {
		t.Fatalf("GET /status = %d store %+v", code, st.Store)
	}

	srv.Command(t, "HSET", "zlink:{spot:game:room:r1}", "owner", "someone", "gen", "not-a-number", "epoch", "1")
	for range 2 {
		var e ErrorResponse
		if code := getJSON(t, url+"/spots/owner?kind=room&id=r1", &e); code != http.StatusInternalServerError || e.Code != "corrupt" {
			t.Fatalf("GET /spots/owner of a corrupt record = %d %+v", code, e)
		}
	}
	st = statusWithStore{}
	if code := getJSON(t, url+"/status", &st); code != http.StatusOK || st.Store == nil || st.Store.CorruptRecords != 2 || st.Store.Errors != 0 {
		t.Fatalf("GET /status after two corrupt reads = %d store %+v", code, st.Store)
	}
	if code, _, body := call(t, http.MethodGet, url+"/metrics", "", ""); code != http.StatusOK ||
		!strings.Contains(body, "zlink_store_corrupt_records_total 2\n") || !strings.Contains(body, "zlink_store_errors_total 0\n") {
		t.Fatalf("GET /metrics = %d without the store's counters", code)
	}
	if n := strings.Count(log.String(), "corrupted record skipped"); n != 1 {
		t.Fatalf("the store logged the corrupt key %d times, want once:\n%s", n, log.String())
	}
}

// An in-memory store has no counters: /status says memory with zeros and
// /metrics has no zlink_store_* series.
func TestStore_MemoryHasNoCounters(t *testing.T) {
	_, _, url := apiWith(t, Options{}, func(o *zlink.Options) {
		o.SetLocationStore(location.NewMemory()).AddRouteMesh("game").Listen("tcp://127.0.0.1:0").SetRoutingIDPrefix("mem")
	})
	var st statusWithStore
	if code := getJSON(t, url+"/status", &st); code != http.StatusOK || st.Store == nil || *st.Store != (StoreStats{Kind: "memory"}) {
		t.Fatalf("GET /status = %d store %+v", code, st.Store)
	}
	if _, _, body := call(t, http.MethodGet, url+"/metrics", "", ""); strings.Contains(body, "zlink_store_") {
		t.Fatal("/metrics has store series for an in-memory store")
	}
}

// statusWithStore is the part of GET /status these tests read
// (routemesh.Status does not decode its states).
type statusWithStore struct {
	RID   string      `json:"rid"`
	Store *StoreStats `json:"store"`
}

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(w io.Writer) zerolog.Logger { return zerolog.New(w).Level(zerolog.WarnLevel) }
