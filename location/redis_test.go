package location_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

var redisPrefix atomic.Int64

// newRedisStore connects to srv through its URL (rediss:// with the
// test CA and client certificate for a TLS server) with a fresh key prefix,
// after tune (if any) changed the configuration.
func newRedisStore(t *testing.T, srv *locationtest.RedisServer, tune ...func(*location.RedisConfig)) *location.Redis {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cfg, err := location.ParseRedisURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = fmt.Sprintf("t%d", redisPrefix.Add(1))
	cfg.PollInterval = 20 * time.Millisecond
	cfg.DialTimeout = 2 * time.Second
	cfg.OpTimeout = 2 * time.Second
	for _, f := range tune {
		f(&cfg)
	}
	s, err := location.NewRedis(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitReal lets d of real time pass so Redis leases expire; the suite then
// waits on the resulting condition.
func waitReal(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}

// The suite runs against a standalone plain server and, beside it, a
// TLS-only server with mutual authentication (certificates generated now).
func TestRedis_Conformance(t *testing.T) {
	for name, start := range map[string]func(t *testing.T) *locationtest.RedisServer{
		"plain": func(t *testing.T) *locationtest.RedisServer { return locationtest.StartRedis(t) },
		"tls": func(t *testing.T) *locationtest.RedisServer {
			return locationtest.StartRedisTLS(t, locationtest.TLSOptions{Certs: locationtest.GenerateCerts(t)})
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			locationtest.Run(t, func(t *testing.T) (location.Store, func(time.Duration)) {
				return newRedisStore(t, srv), waitReal
			})
		})
	}
}

func TestRedis_NewFailsWhenUnreachable(t *testing.T) {
	srv := locationtest.StartRedis(t)
	addr := srv.Addr()
	srv.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr, DialTimeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("NewRedis succeeded without a server")
	}
}

// Seed addresses (RedisConfig.Addrs) are for a Cluster: a standalone
// server named twice is refused.
func TestRedis_AddrsNeedCluster(t *testing.T) {
	srv := locationtest.StartRedis(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: srv.Addr(), Addrs: []string{srv.Addr()}})
	if err == nil {
		s.Close()
		t.Fatal("NewRedis took seed addresses of a standalone server")
	}
	if !strings.Contains(err.Error(), "Redis Cluster") {
		t.Fatalf("error %v does not say why", err)
	}
}

// The client survives a Redis restart, over plain TCP and over TLS (new
// handshakes): calls fail (never hang) while the server is down and succeed
// again after it is back; Watch recovers too.
func TestRedis_SurvivesRestart(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testSurvivesRestart(t, locationtest.StartRedis(t)) })
	t.Run("tls", func(t *testing.T) {
		testSurvivesRestart(t, locationtest.StartRedisTLS(t, locationtest.TLSOptions{Certs: locationtest.GenerateCerts(t)}))
	})
}

func testSurvivesRestart(t *testing.T, srv *locationtest.RedisServer) {
	s := newRedisStore(t, srv)
	ctx := t.Context()
	d := locationtest.Desc("m", "a", 1, 1)
	if err := s.PutDescriptor(ctx, d, time.Minute); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.Watch(wctx, "m")
	if err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	err = s.PutDescriptor(short, d, time.Minute)
	cancelShort()
	if err == nil {
		t.Fatal("put succeeded while redis was down")
	}
	if errors.Is(err, location.ErrNotFound) || errors.Is(err, location.ErrClosed) {
		t.Fatalf("down server reported as %v", err)
	}
	short, cancelShort = context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = s.ListDescriptors(short, "m")
	cancelShort()
	if err == nil {
		t.Fatal("list succeeded while redis was down")
	}

	srv.Restart(t)
	// The restarted server is empty; the owner writes its descriptor again.
	locationtest.WaitFor(t, "put to succeed after restart", func() bool {
		c, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		return s.PutDescriptor(c, locationtest.Desc("m", "b", 2, 1), time.Minute) == nil
	})
	locationtest.NextEvent(t, events, location.Event{Kind: location.EventPut, Mesh: "m", RID: "b"}, nil)
	// Scripts are reloaded transparently (NOSCRIPT → EVAL). A pooled
	// connection the restart broke may fail one write (EOF: a write is
	// never retried, it may have been applied); a try whose answer was lost
	// after it landed leaves the record equal to next.
	sp := location.Ownership{Kind: "k", ID: "1", Mesh: "m"}
	next := location.Ownership{Kind: "k", ID: "1", Mesh: "m", OwnerRID: "b", OwnerGeneration: 2, Epoch: 1}
	locationtest.WaitFor(t, "a claim after the restart", func() bool {
		o, err := s.ClaimSpot(ctx, sp, next)
		return o == next && (err == nil || errors.Is(err, location.ErrFenced))
	})
	// A push after the restart reaches the resubscribed watch.
	if err := s.DeleteDescriptor(ctx, "m", "b", 2); err != nil {
		t.Fatal(err)
	}
	locationtest.NextEvent(t, events, location.Event{Kind: location.EventDelete, Mesh: "m", RID: "b"}, nil)
}

// The incarnation of a Redis shard is its run_id: a restart changes it, so
// a node learns that what the old process acknowledged may be gone.
func TestRedis_SpotIncarnationChangesOnRestart(t *testing.T) {
	srv := locationtest.StartRedis(t)
	s := newRedisStore(t, srv)
	ctx := t.Context()
	before, err := s.SpotIncarnation(ctx, "m", "k", "a")
	if err != nil || before == "" {
		t.Fatalf("incarnation %q, %v", before, err)
	}
	if again, err := s.SpotIncarnation(ctx, "m", "k", "b"); err != nil || again != before {
		t.Fatalf("same server, another key: %q, %v; want %q", again, err, before)
	}
	srv.Restart(t)
	var after string
	locationtest.WaitFor(t, "the store answers after the restart", func() bool {
		after, err = s.SpotIncarnation(ctx, "m", "k", "a")
		return err == nil
	})
	if after == before {
		t.Fatalf("incarnation %q unchanged across a restart", after)
	}
}
