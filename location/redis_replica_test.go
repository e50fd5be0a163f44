package location_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

// replicaTimeout is the WAIT bound of the replica tests. A replica's ack
// under a race-instrumented run on a loaded machine has taken over 600 ms;
// 1.2 s, and the tests' stores get replicaOpTimeout so that an operation
// with two WAITs still ends within it.
const (
	replicaTimeout   = 1200 * time.Millisecond
	replicaOpTimeout = 4 * time.Second
)

// unconfirmedBound bounds how long a write to a master whose replica is
// gone may take to fail: WAIT's timeout plus generous slack for a loaded
// machine.
const unconfirmedBound = replicaTimeout + 3*time.Second

func withReplicaTimeout(cfg *location.RedisConfig) {
	cfg.ReplicaTimeout, cfg.OpTimeout = replicaTimeout, replicaOpTimeout
}

func ownedBy(sp location.Ownership, rid string, gen, epoch uint64) location.Ownership {
	sp.OwnerRID, sp.OwnerGeneration, sp.Epoch = rid, gen, epoch
	return sp
}

func requireUnconfirmed(t *testing.T, what string, start time.Time, err error) {
	t.Helper()
	took := time.Since(start)
	if !errors.Is(err, location.ErrUnconfirmed) {
		t.Fatalf("%s: error %v, want ErrUnconfirmed", what, err)
	}
	if took > unconfirmedBound {
		t.Fatalf("%s: ErrUnconfirmed after %v, want within %v", what, took, unconfirmedBound)
	}
}

// On a master with a replica every Spot directory write returns only once
// the replica has it (WAIT 1 on the same connection); with the replica gone
// every write fails with ErrUnconfirmed within the WAIT bound, while
// refusals stay refusals; once the replica is back writes count again.
func TestRedis_ReplicaConfirmsSpotWrites(t *testing.T) {
	master := locationtest.StartRedis(t)
	replica := locationtest.StartRedisReplica(t, master)
	s := newRedisStore(t, master, withReplicaTimeout)
	prefix := fmt.Sprintf("t%d", redisPrefix.Load())
	ctx := t.Context()

	l := location.SpotLease{Mesh: "m", RID: "n1", Generation: 1}
	if err := s.CreateSpotLease(ctx, l, time.Minute); err != nil {
		t.Fatal(err)
	}
	sp := location.Ownership{Mesh: "m", Kind: "room", ID: "1"}
	o, err := s.ClaimSpot(ctx, sp, ownedBy(sp, "n1", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	// The writes returned after the replica had them: read them there at
	// once, without waiting.
	if v := replica.Command(t, "HGET", prefix+":{spot:m:room:1}", "owner"); v != "n1" {
		t.Fatalf("replica holds owner %q right after the claim returned", v)
	}
	if v := replica.Command(t, "EXISTS", prefix+":{spotlease:m:n1}:1"); v != "1" {
		t.Fatalf("replica lacks the lease right after it was created (EXISTS %s)", v)
	}
	if st := s.Stats(); st.ReplicaWaits != 2 || st.UnconfirmedWrites != 0 {
		t.Fatalf("stats %+v, want 2 confirmed writes", st)
	}

	replica.Stop()
	start := time.Now()
	_, err = s.TransferSpot(ctx, o, "n2", 2)
	requireUnconfirmed(t, "transfer", start, err)
	// Unconfirmed is not undone: the master applied the transfer.
	cur, err := s.SpotRecord(ctx, "m", "room", "1")
	if err != nil || cur != ownedBy(sp, "n2", 2, 2) {
		t.Fatalf("record after an unconfirmed transfer %+v %v", cur, err)
	}
	start = time.Now()
	requireUnconfirmed(t, "release", start, s.ReleaseSpot(ctx, cur))
	start = time.Now()
	requireUnconfirmed(t, "renew lease", start, s.RenewSpotLease(ctx, l, time.Minute))
	start = time.Now()
	requireUnconfirmed(t, "create lease", start, s.CreateSpotLease(ctx, location.SpotLease{Mesh: "m", RID: "n1", Generation: 2}, time.Minute))
	start = time.Now()
	live, err := s.CheckSpotLease(ctx, location.SpotLease{Mesh: "m", RID: "gone", Generation: 1}, time.Minute)
	if live {
		t.Fatal("a lease never created is live")
	}
	requireUnconfirmed(t, "tombstone", start, err)
	start = time.Now()
	requireUnconfirmed(t, "delete lease", start, s.DeleteSpotLease(ctx, l))
	// Refusals wrote nothing and say so.
	if err := s.CreateSpotLease(ctx, location.SpotLease{Mesh: "m", RID: "n1", Generation: 2}, time.Minute); !errors.Is(err, location.ErrExists) {
		t.Fatalf("create of an existing lease: %v, want ErrExists", err)
	}
	if _, err := s.ClaimSpot(ctx, sp, ownedBy(sp, "n3", 3, 1)); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("claim expecting a wrong record: %v, want ErrFenced", err)
	}
	if st := s.Stats(); st.UnconfirmedWrites != 6 {
		t.Fatalf("stats %+v, want 6 unconfirmed writes", st)
	}

	replica.Restart(t)
	replica.WaitReplicaLink(t, master)
	gen := uint64(10)
	locationtest.WaitFor(t, "a write confirmed by the restarted replica", func() bool {
		gen++
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return s.CreateSpotLease(c, location.SpotLease{Mesh: "m", RID: "n1", Generation: gen}, time.Minute) == nil
	})
}

// A standalone server without replicas pays no WAIT.
func TestRedis_NoReplicaNoWait(t *testing.T) {
	s := newRedisStore(t, locationtest.StartRedis(t))
	ctx := t.Context()
	sp := location.Ownership{Mesh: "m", Kind: "room", ID: "1"}
	o, err := s.ClaimSpot(ctx, sp, ownedBy(sp, "n1", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSpot(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSpotLease(ctx, location.SpotLease{Mesh: "m", RID: "n1", Generation: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.ReplicaWaits != 0 {
		t.Fatalf("stats %+v: writes waited without replicas", st)
	}
}

// ReplicaAcksAlways waits even without replicas (and so never confirms);
// ReplicaAcksNever never waits, even on a master whose replica is gone.
func TestRedis_ReplicaAcksModes(t *testing.T) {
	sp := location.Ownership{Mesh: "m", Kind: "room", ID: "1"}
	t.Run("always", func(t *testing.T) {
		s := newRedisStore(t, locationtest.StartRedis(t), withReplicaTimeout,
			func(cfg *location.RedisConfig) { cfg.ReplicaAcks = location.ReplicaAcksAlways })
		start := time.Now()
		_, err := s.ClaimSpot(t.Context(), sp, ownedBy(sp, "n1", 1, 1))
		requireUnconfirmed(t, "claim", start, err)
	})
	t.Run("never", func(t *testing.T) {
		master := locationtest.StartRedis(t)
		replica := locationtest.StartRedisReplica(t, master)
		s := newRedisStore(t, master, withReplicaTimeout,
			func(cfg *location.RedisConfig) { cfg.ReplicaAcks = location.ReplicaAcksNever })
		replica.Stop()
		if _, err := s.ClaimSpot(t.Context(), sp, ownedBy(sp, "n1", 1, 1)); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.ReplicaWaits != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A replica attached after the store started is found by the periodic
// check; from then on writes wait for it.
func TestRedis_ReplicaFoundLater(t *testing.T) {
	master := locationtest.StartRedis(t)
	s := newRedisStore(t, master, withReplicaTimeout,
		func(cfg *location.RedisConfig) { cfg.ReplicaRefresh = 20 * time.Millisecond })
	ctx := t.Context()
	gen := uint64(0)
	write := func() error {
		gen++
		return s.CreateSpotLease(ctx, location.SpotLease{Mesh: "m", RID: "n", Generation: gen}, time.Minute)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.ReplicaWaits != 0 {
		t.Fatalf("stats %+v before any replica", st)
	}
	locationtest.StartRedisReplica(t, master)
	locationtest.WaitFor(t, "a write to wait for the new replica", func() bool {
		return write() == nil && s.Stats().ReplicaWaits > 0
	})
}
