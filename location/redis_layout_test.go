package location_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// The key layout documented in doc.go: every key of a mesh shares the
// {mesh:<MeshName>} hash tag (the descriptor index, change log and
// revision of a mesh expire an hour after its last change or sweep; the
// removals log appears with the first delete), fanout keys share
// {fanout:<Channel>}, every Spot record has its own tag
// {spot:<mesh>:<kind>:<id>} and the Spot lease
// keys of a node share {spotlease:<mesh>:<rid>}.
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
	sp := location.Ownership{Kind: "player", ID: "7", Mesh: "game"}
	next := sp
	next.OwnerRID, next.OwnerGeneration, next.Epoch = "n1", 1, 1
	if _, err := s.ClaimSpot(ctx, sp, next); err != nil {
		t.Fatal(err)
	}
	released := location.Ownership{Kind: "player", ID: "8", Mesh: "game", OwnerRID: "n1", OwnerGeneration: 1, Epoch: 5}
	if _, err := s.ClaimSpot(ctx, location.Ownership{Kind: "player", ID: "8", Mesh: "game"}, released); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSpot(ctx, released); err != nil {
		t.Fatal(err)
	}
	l := location.SpotLease{Mesh: "game", RID: "n1", Generation: 1 << 63}
	if err := s.CreateSpotLease(ctx, l, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	l.Generation = 2
	if live, err := s.CheckSpotLease(ctx, l, 20*time.Second); err != nil || live {
		t.Fatalf("check of a lease never created: %v %v", live, err)
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
		"zlink:{mesh:game}:node:n1":                     true,
		"zlink:{mesh:game}:live":                        true,
		"zlink:{mesh:game}:changed":                     true,
		"zlink:{mesh:game}:rev":                         true,
		"zlink:{spot:game:player:7}":                    false,
		"zlink:{spot:game:player:8}":                    false,
		"zlink:{spotlease:game:n1}:9223372036854775808": true,
		"zlink:{spotlease:game:n1}:tomb:2":              true,
		"zlink:{fanout:news}:pub:p1":                    true,
		"zlink:{fanout:news}:pubs":                      true,
	} {
		ttl := pttl(key)
		switch {
		case ttl == -2:
			t.Errorf("key %s missing", key)
		case key == "zlink:{mesh:game}:live" || key == "zlink:{mesh:game}:changed" || key == "zlink:{mesh:game}:rev":
			if ttl < 30_000 || ttl > 3600_000 {
				t.Errorf("index key %s PTTL %d, want one hour", key, ttl)
			}
		case leased && (ttl <= 0 || ttl > 30_000):
			t.Errorf("key %s PTTL %d, want a lease ≤ 30s", key, ttl)
		case !leased && ttl != -1:
			t.Errorf("key %s PTTL %d, want no expiry", key, ttl)
		}
	}
	for key, want := range map[string]map[string]string{
		"zlink:{spot:game:player:7}": {"owner": "n1", "gen": "1", "epoch": "1"},
		"zlink:{spot:game:player:8}": {"owner": "", "gen": "", "epoch": "5"}, // released: the epoch stays
	} {
		rec, err := raw.Do(ctx, raw.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(rec, want) {
			t.Errorf("spot record %s: %v, want %v", key, rec, want)
		}
	}
	n, err := raw.Do(ctx, raw.B().Dbsize().Build()).AsInt64()
	if err != nil || n != 10 {
		t.Fatalf("%d keys (%v), want only the 10 above", n, err)
	}
}
