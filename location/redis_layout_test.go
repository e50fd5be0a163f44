package location_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// The key layout documented in doc.go: every key of a mesh shares the
// {mesh:<MeshName>} hash tag, fanout keys share {fanout:<Channel>}.
func TestRedis_KeyLayout(t *testing.T) {
	srv := locationtest.StartRedis(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, location.RedisConfig{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	if err := s.PutDescriptor(ctx, locationtest.Desc("game", "n1", 1, 1), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, location.Ownership{Kind: "player", ID: "7", Mesh: "game", OwnerRID: "n1", OwnerGeneration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPublisher(ctx, location.Publisher{Channel: "news", RID: "p1", Generation: 1, Endpoint: "tcp://h:1"}, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	pttl := func(key string) int64 {
		t.Helper()
		v, err := raw.Do(ctx, raw.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for key, leased := range map[string]bool{
		"zlink:{mesh:game}:node:n1":       true,
		"zlink:{mesh:game}:nodes":         true,
		"zlink:{mesh:game}:spot:player:7": false,
		"zlink:{fanout:news}:pub:p1":      true,
		"zlink:{fanout:news}:pubs":        true,
	} {
		ttl := pttl(key)
		switch {
		case ttl == -2:
			t.Errorf("key %s missing", key)
		case leased && (ttl <= 0 || ttl > 30_000):
			t.Errorf("key %s PTTL %d, want a lease ≤ 30s", key, ttl)
		case !leased && ttl != -1:
			t.Errorf("key %s PTTL %d, want no expiry", key, ttl)
		}
	}
	rec, err := raw.Do(ctx, raw.B().Hgetall().Key("zlink:{mesh:game}:spot:player:7").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if rec["owner"] != "n1" || rec["gen"] != "1" || rec["epoch"] != "1" {
		t.Fatalf("spot record %v", rec)
	}
}
