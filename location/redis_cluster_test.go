package location_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// newClusterStore connects to a cluster through its URL (several seed
// addresses) with a fresh key prefix.
func newClusterStore(t *testing.T, c *locationtest.RedisCluster, tune func(*location.RedisConfig)) *location.Redis {
	t.Helper()
	cfg, err := location.ParseRedisURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Addrs) != locationtest.ClusterMasters-1 {
		t.Fatalf("cluster URL %s parsed to %+v", c.URL(), cfg)
	}
	cfg.Prefix = fmt.Sprintf("t%d", redisPrefix.Add(1))
	cfg.PollInterval = 20 * time.Millisecond
	cfg.DialTimeout = 2 * time.Second
	cfg.OpTimeout = 2 * time.Second
	if tune != nil {
		tune(&cfg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := location.NewRedis(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRedisCluster runs everything that needs a real 3-master Redis
// Cluster against one, started once (it takes 1 to 3 seconds, mostly
// redis-cli waiting: hence in parallel with the other tests).
func TestRedisCluster(t *testing.T) {
	t.Parallel()
	c := locationtest.StartRedisCluster(t)
	t.Run("Conformance", func(t *testing.T) {
		locationtest.Run(t, func(t *testing.T) (location.Store, func(time.Duration)) {
			return newClusterStore(t, c, nil), waitReal
		})
	})
	t.Run("SpotsSpreadOverMasters", func(t *testing.T) { testSpotsSpread(t, c) })
	t.Run("WatchPushes", func(t *testing.T) { testClusterWatchPushes(t, c) })
	t.Run("KeySlot", func(t *testing.T) { testKeySlot(t, c) })
	t.Run("OnlyDB0", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		s, err := location.NewRedis(ctx, location.RedisConfig{Addr: c.Addrs()[0], DB: 1})
		if err == nil {
			s.Close()
			t.Fatal("NewRedis took db 1 on a Cluster")
		}
		t.Log(err)
	})
	// Last: it adds a replica to the cluster.
	t.Run("ReplicaOfOneMaster", func(t *testing.T) { testClusterReplica(t, c) })
}

// Spot records of many IDs land in many slots, on every master: the
// directory scales out with the cluster. Without replicas no write waits.
func testSpotsSpread(t *testing.T, c *locationtest.RedisCluster) {
	s := newClusterStore(t, c, nil)
	ctx := t.Context()
	const n = 300
	prefix := fmt.Sprintf("t%d", redisPrefix.Load()) // newClusterStore's
	slots := make(map[uint16]bool)
	for i := range n {
		sp := location.Ownership{Mesh: "game", Kind: "player", ID: strconv.Itoa(i)}
		next := sp
		next.OwnerRID, next.OwnerGeneration, next.Epoch = "n1", 1, 1
		if _, err := s.ClaimSpot(ctx, sp, next); err != nil {
			t.Fatal(err)
		}
		slots[location.KeySlot(prefix+":{spot:game:player:"+sp.ID+"}")] = true
	}
	if len(slots) < n*9/10 {
		t.Fatalf("%d Spot records in only %d slots", n, len(slots))
	}
	total := 0
	for _, node := range c.Nodes() {
		raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr()}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		keys := 0
		for cursor := uint64(0); ; {
			e, err := raw.Do(ctx, raw.B().Scan().Cursor(cursor).Match(prefix+":{spot:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				raw.Close()
				t.Fatal(err)
			}
			keys += len(e.Elements)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
		raw.Close()
		t.Logf("master %s holds %d of %d Spot records", node.Addr(), keys, n)
		if keys == 0 {
			t.Errorf("master %s holds no Spot record", node.Addr())
		}
		total += keys
	}
	if total != n {
		t.Fatalf("%d Spot records on the masters, want %d", total, n)
	}
	if st := s.Stats(); st.ReplicaWaits != 0 {
		t.Fatalf("writes waited for replicas of a cluster without any: %+v", st)
	}
}

// Watch hears pushes published on whichever master holds the mesh's slot
// (PUBLISH reaches every node of a cluster): with polling off in effect,
// every put is announced all the same.
func testClusterWatchPushes(t *testing.T, c *locationtest.RedisCluster) {
	s := newClusterStore(t, c, func(cfg *location.RedisConfig) { cfg.PollInterval = time.Hour })
	ctx := t.Context()
	for i := range 6 {
		mesh := fmt.Sprintf("mesh%d", i)
		ch, err := s.Watch(ctx, mesh)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PutDescriptor(ctx, locationtest.Desc(mesh, "n", 1, 1), time.Minute); err != nil {
			t.Fatal(err)
		}
		locationtest.NextEvent(t, ch, location.Event{Kind: location.EventPut, Mesh: mesh, RID: "n"}, nil)
	}
}

// keySlot agrees with the cluster's CLUSTER KEYSLOT, hash tags included.
func testKeySlot(t *testing.T, c *locationtest.RedisCluster) {
	node := c.Nodes()[0]
	for _, key := range []string{
		"", "a", "foo", "zlink:{spot:game:player:42}", "zlink:{spotlease:game:n1}:7",
		"zlink:{spotlease:game:n1}:tomb:7", "{}x", "x{}y", "a{b}{c}", "{user1000}.following",
		"zlink:{mesh:game}:node:n1", "\xff\x00{\xfe}",
	} {
		want, err := strconv.Atoi(node.Command(t, "CLUSTER", "KEYSLOT", key))
		if err != nil {
			t.Fatal(err)
		}
		if got := location.KeySlot(key); int(got) != want {
			t.Errorf("KeySlot(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
}

// Replicas are tracked per master: with a replica on the first master only,
// writes to its slots wait for the replica (and fail with ErrUnconfirmed
// once it is gone) while writes to the other masters never wait.
func testClusterReplica(t *testing.T, c *locationtest.RedisCluster) {
	master := c.Nodes()[0]
	replica := c.AddReplica(t, master)
	s := newClusterStore(t, c, withReplicaTimeout)
	prefix := fmt.Sprintf("t%d", redisPrefix.Load())
	ctx := t.Context()
	raw, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{master.Addr()}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// onMaster reports whether key lives on master (others answer MOVED).
	onMaster := func(key string) bool {
		_, err := raw.Do(ctx, raw.B().Exists().Key(key).Build()).AsInt64()
		return err == nil
	}
	claim := func(id string) (bool, error) {
		sp := location.Ownership{Mesh: "game", Kind: "room", ID: id}
		_, err := s.ClaimSpot(ctx, sp, ownedBy(sp, "n1", 1, 1))
		return onMaster(prefix + ":{spot:game:room:" + id + "}"), err
	}
	waited, other := 0, 0
	for i := range 30 {
		before := s.Stats().ReplicaWaits
		replicated, err := claim(fmt.Sprintf("a%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Stats().ReplicaWaits - before; got != map[bool]uint64{true: 1, false: 0}[replicated] {
			t.Fatalf("claim on the replicated master: %v, WAITs sent: %d", replicated, got)
		}
		if replicated {
			waited++
		} else {
			other++
		}
	}
	if waited == 0 || other == 0 {
		t.Fatalf("%d claims on the replicated master, %d elsewhere: want both", waited, other)
	}

	replica.Stop()
	unconfirmed := 0
	for i := range 12 {
		start := time.Now()
		replicated, err := claim(fmt.Sprintf("b%d", i))
		if replicated {
			requireUnconfirmed(t, "claim on the master that lost its replica", start, err)
			unconfirmed++
		} else if err != nil {
			t.Fatalf("claim on a master without replicas: %v", err)
		}
	}
	if unconfirmed == 0 {
		t.Fatal("no claim landed on the master that lost its replica")
	}
}
