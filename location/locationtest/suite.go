package locationtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// NewStoreFunc returns a fresh, empty store and an expire function that
// makes d of lease time pass: it advances an injected clock (memory) or
// waits for real time (Redis). The store is closed at test cleanup by the
// caller of Run or by the suite (Close is idempotent).
type NewStoreFunc func(t *testing.T) (store location.Store, expire func(d time.Duration))

// TTLs used by the suite: ShortTTL leases are expired by the tests,
// LongTTL leases outlive every test.
const (
	ShortTTL = 200 * time.Millisecond
	LongTTL  = time.Minute
)

// waitTimeout bounds every condition wait of the suite.
const waitTimeout = 10 * time.Second

// Run runs the conformance suite against the stores made by newStore.
func Run(t *testing.T, newStore NewStoreFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s location.Store, expire func(time.Duration))
	}{
		{"DescriptorPutGetList", testPutGetList},
		{"DescriptorValidation", testValidation},
		{"DescriptorRevision", testRevision},
		{"DescriptorRenewDelete", testRenewDelete},
		{"TTLExpiry", testTTLExpiry},
		{"WatchPutDeleteExpiry", testWatch},
		{"WatchSlowConsumer", testWatchSlowConsumer},
		{"DescriptorChanges", testDescriptorChanges},
		{"DescriptorExpiry", testDescriptorExpiry},
		{"DescriptorChangesLogBound", testDescriptorChangesLogBound},
		{"PublishersIsolated", testPublishers},
		{"MeshIsolation", testMeshIsolation},
		{"Closed", testClosed},
		{"SpotLeaseCreateRenewDelete", testSpotLeaseCreateRenewDelete},
		{"SpotLeaseTombstone", testSpotLeaseTombstone},
		{"SpotLeaseTombstoneExpires", testSpotLeaseTombstoneExpires},
		{"SpotLeaseLiveReads", testSpotLeaseLiveReads},
		{"SpotClaimAbsent", testSpotClaimAbsent},
		{"SpotClaimReleased", testSpotClaimReleased},
		{"SpotClaimMismatch", testSpotClaimMismatch},
		{"SpotClaimConcurrent", testSpotClaimConcurrent},
		{"SpotReleaseCompares", testSpotReleaseCompares},
		{"SpotTransferCompares", testSpotTransferCompares},
		{"SpotEpochsNeverDecrease", testSpotEpochsNeverDecrease},
		{"SpotIncarnation", testSpotIncarnation},
		{"SpotState", testSpotState},
		{"SpotClaimWithState", testSpotClaimWithState},
		{"SpotMeshIsolation", testSpotMeshIsolation},
		{"SpotValidation", testSpotValidation},
		{"ReminderPutListDelete", testReminderPutListDelete},
		{"ReminderLimit", testReminderLimit},
		{"ReminderFenced", testReminderFenced},
		{"ReminderIndexFix", testReminderIndexFix},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, expire := newStore(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s, expire)
		})
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Desc returns a valid descriptor for tests.
func Desc(mesh, rid string, gen, rev uint64) location.Descriptor {
	return location.Descriptor{
		Mesh: mesh, RID: rid, Generation: gen, Revision: rev,
		Endpoint:         "tcp://127.0.0.1:" + fmt.Sprint(7000+len(rid)),
		Servers:          map[string]uint16{"match": 100, "lobby": 0},
		ObjectRole:       location.RoleServer,
		PlacementWeight:  10,
		SecurityIdentity: "shared:abcd",
		Protocol:         1,
	}
}

func sameDescriptor(a, b location.Descriptor) bool {
	ea, eb := a, b
	ea.Servers, eb.Servers = nil, nil
	// Kinds: nil (not listed) and empty (hosts none) differ.
	return maps.Equal(a.Servers, b.Servers) && (a.Kinds == nil) == (b.Kinds == nil) && fmt.Sprint(ea) == fmt.Sprint(eb)
}

func requireDescriptor(t *testing.T, got, want location.Descriptor) {
	t.Helper()
	if !sameDescriptor(got, want) {
		t.Fatalf("descriptor:\n got  %+v\n want %+v", got, want)
	}
}

func rids(ds []location.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.RID
	}
	return out
}

func requireIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

func requireNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// WaitFor polls cond until it holds or waitTimeout passes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		case <-tick.C:
		}
	}
}

// NextEvent reads events until one matches, failing after waitTimeout.
// Every event read is passed to seen (may be nil).
func NextEvent(t testing.TB, ch <-chan location.Event, want location.Event, seen func(location.Event)) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for %+v", want)
			}
			if seen != nil {
				seen(ev)
			}
			if ev == want {
				return
			}
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for event %+v", waitTimeout, want)
		}
	}
}

func put(t *testing.T, s location.Store, d location.Descriptor, ttl time.Duration) {
	t.Helper()
	requireNoErr(t, s.PutDescriptor(testCtx(t), d, ttl))
}
