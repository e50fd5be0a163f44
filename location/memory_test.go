package location_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// rueidis schedules a delayed cluster-topology refresh after a failed
		// dial (NewRedis against a stopped server); it ends by itself.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		// After a Cluster topology refresh rueidis closes the connections it
		// replaced 5 s later, from a goroutine that ends by itself.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

func newMemory(t *testing.T) (location.Store, func(time.Duration)) {
	clock := locationtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	s := location.NewMemory(location.WithClock(clock.Now), location.WithPollInterval(5*time.Millisecond))
	t.Cleanup(func() { _ = s.Close() })
	return s, clock.Advance
}

func TestMemory_Conformance(t *testing.T) {
	locationtest.Run(t, newMemory)
}

// The lease ends exactly at put time + TTL, by the injected clock.
func TestMemory_LeaseBoundary(t *testing.T) {
	clock := locationtest.NewFakeClock(time.Unix(0, 0))
	s := location.NewMemory(location.WithClock(clock.Now))
	defer s.Close()
	ctx := t.Context()
	if err := s.PutDescriptor(ctx, locationtest.Desc("m", "n", 1, 1), time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second - time.Nanosecond)
	if _, err := s.GetDescriptor(ctx, "m", "n"); err != nil {
		t.Fatalf("lease ended early: %v", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := s.GetDescriptor(ctx, "m", "n"); err == nil {
		t.Fatal("lease outlived its TTL")
	}
}
