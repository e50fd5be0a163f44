package locationtest

import (
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// Spot directory conformance: bad input, a closed store, incarnations
// and Spot states.

func testSpotValidation(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	long := string(make([]byte, 257))
	sp := spot("m", "room", "r1")
	for name, l := range map[string]location.SpotLease{
		"no mesh":        lease("", "n", 1),
		"mesh with ':'":  lease("a:b", "n", 1),
		"mesh with '{'":  lease("a{b", "n", 1),
		"no RID":         lease("m", "", 1),
		"long RID":       lease("m", long, 1),
		"generation 0":   lease("m", "n", 0),
		"mesh too long":  lease(long, "n", 1),
		"RID and gen 0":  lease("m", "", 0),
		"closing brace":  lease("m}", "n", 1),
		"everything bad": {},
	} {
		if err := s.CreateSpotLease(ctx, l, LongTTL); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("create lease, %s: %v", name, err)
		}
		if err := s.RenewSpotLease(ctx, l, LongTTL); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("renew lease, %s: %v", name, err)
		}
		if err := s.DeleteSpotLease(ctx, l); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("delete lease, %s: %v", name, err)
		}
		if _, err := s.CheckSpotLease(ctx, l, LongTTL); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("check lease, %s: %v", name, err)
		}
	}
	good := lease("m", "n", 1)
	requireIs(t, s.CreateSpotLease(ctx, good, 0), location.ErrInvalid)
	requireIs(t, s.RenewSpotLease(ctx, good, time.Microsecond), location.ErrInvalid)
	_, err := s.CheckSpotLease(ctx, good, 0)
	requireIs(t, err, location.ErrInvalid)
	// Nothing was tombstoned by a refused check.
	requireNoErr(t, s.CreateSpotLease(ctx, good, LongTTL))
	// The limits are inclusive.
	requireNoErr(t, s.CreateSpotLease(ctx, lease("m", string(make([]byte, 256)), 1), LongTTL))

	for name, spot := range map[string][3]string{
		"no mesh": {"", "room", "1"}, "mesh with ':'": {"a:b", "room", "1"}, "no kind": {"m", "", "1"},
		"kind with ':'": {"m", "a:b", "1"}, "no id": {"m", "room", ""}, "long kind": {"m", long, "1"},
	} {
		if _, err := s.SpotRecord(ctx, spot[0], spot[1], spot[2]); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("record, %s: %v", name, err)
		}
	}
	const maxEpoch = 999_999_999_999_999
	other := spot("m", "room", "r2")
	for name, c := range map[string][2]location.Ownership{
		"next without owner":         {sp, released(owned(sp, "", 0, 1))},
		"next generation 0":          {sp, owned(sp, "a", 0, 1)},
		"next epoch 0":               {sp, owned(sp, "a", 1, 0)},
		"next long RID":              {sp, owned(sp, long, 1, 1)},
		"next epoch not above":       {owned(sp, "a", 1, 3), owned(sp, "b", 1, 3)},
		"next epoch below":           {owned(sp, "a", 1, 3), owned(sp, "b", 1, 2)},
		"next epoch above max":       {owned(sp, "a", 1, maxEpoch), owned(sp, "b", 1, maxEpoch+1)},
		"expected owner without gen": {owned(sp, "a", 0, 1), owned(sp, "b", 1, 2)},
		"expected gen without owner": {owned(sp, "", 5, 1), owned(sp, "b", 1, 2)},
		"another spot":               {other, owned(sp, "b", 1, 1)},
		"another mesh":               {spot("m2", "room", "r1"), owned(sp, "b", 1, 1)},
		"mesh with ':'":              {spot("a:b", "room", "1"), owned(spot("a:b", "room", "1"), "b", 1, 1)},
	} {
		if _, err := s.ClaimSpot(ctx, c[0], c[1]); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("claim, %s: %v", name, err)
		}
	}
	for name, o := range map[string]location.Ownership{
		"no owner": released(owned(sp, "", 0, 1)), "generation 0": owned(sp, "a", 0, 1),
		"epoch 0": owned(sp, "a", 1, 0), "no kind": owned(spot("m", "", "1"), "a", 1, 1),
		"epoch above max": owned(sp, "a", 1, maxEpoch+1),
	} {
		if err := s.ReleaseSpot(ctx, o); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("release, %s: %v", name, err)
		}
		if _, err := s.TransferSpot(ctx, o, "b", 2); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("transfer, %s: %v", name, err)
		}
	}
	from := owned(sp, "a", 1, 1)
	for name, to := range map[string]struct {
		rid string
		gen uint64
	}{"no RID": {"", 1}, "generation 0": {"b", 0}, "long RID": {long, 1}} {
		if _, err := s.TransferSpot(ctx, from, to.rid, to.gen); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("transfer to %s: %v", name, err)
		}
	}
	_, err = s.TransferSpot(ctx, owned(sp, "a", 1, maxEpoch), "b", 2) // no next epoch
	requireIs(t, err, location.ErrInvalid)
	requireRecord(t, s, sp)
	requireRecord(t, s, other)
	// The epoch limit is inclusive.
	claimSpot(t, s, sp, owned(sp, "a", 1, maxEpoch))
}

// closedSpotDirectory checks that every directory call of a closed store
// fails with ErrClosed.
func closedSpotDirectory(t *testing.T, s location.Store) {
	t.Helper()
	ctx := testCtx(t)
	l, sp := lease("m", "n", 1), spot("m", "k", "1")
	o := owned(sp, "n", 1, 1)
	requireIs(t, s.CreateSpotLease(ctx, l, LongTTL), location.ErrClosed)
	requireIs(t, s.RenewSpotLease(ctx, l, LongTTL), location.ErrClosed)
	requireIs(t, s.DeleteSpotLease(ctx, l), location.ErrClosed)
	_, err := s.CheckSpotLease(ctx, l, LongTTL)
	requireIs(t, err, location.ErrClosed)
	_, err = s.SpotRecord(ctx, "m", "k", "1")
	requireIs(t, err, location.ErrClosed)
	_, err = s.ClaimSpot(ctx, sp, o)
	requireIs(t, err, location.ErrClosed)
	requireIs(t, s.ReleaseSpot(ctx, o), location.ErrClosed)
	_, err = s.TransferSpot(ctx, o, "b", 2)
	requireIs(t, err, location.ErrClosed)
}

// testSpotIncarnation: a claim reports the incarnation of the shard that
// applied it, and a probe of the same Spot answers the same one while the
// store keeps its data.
func testSpotIncarnation(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := location.Ownership{Mesh: "game", Kind: "player", ID: "inc-1"}
	l := location.SpotLease{Mesh: "game", RID: "n1", Generation: 1}
	requireNoErr(t, s.CreateSpotLease(ctx, l, time.Minute))
	next := sp
	next.OwnerRID, next.OwnerGeneration, next.Epoch = "n1", 1, 1
	_, inc, err := s.ClaimSpotIn(ctx, sp, next)
	requireNoErr(t, err)
	if inc == "" {
		t.Fatal("ClaimSpotIn reported no incarnation")
	}
	got, err := s.SpotIncarnation(ctx, "game", "player", "inc-1")
	requireNoErr(t, err)
	if got != inc {
		t.Fatalf("incarnation %q after a claim in %q", got, inc)
	}
	if _, err := s.SpotIncarnation(ctx, "game", "", "x"); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("invalid spot: %v", err)
	}
}

// testSpotState: a state write succeeds only while the record names the
// writer (owner, generation, epoch) — a stale owner cannot write, not even
// before the new owner's first write — and reads back what was written.
func testSpotState(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := location.Ownership{Mesh: "game", Kind: "player", ID: "st-1"}
	if _, err := s.GetSpotState(ctx, "game", "player", "st-1"); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("no state yet: %v", err)
	}
	if _, err := s.SpotStateEpoch(ctx, "game", "player", "st-1"); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("no state epoch yet: %v", err)
	}
	checkClaimView(t, s, sp, 0)
	a := sp
	a.OwnerRID, a.OwnerGeneration, a.Epoch = "a", 1, 1
	if err := s.PutSpotState(ctx, a, location.SpotState{Data: []byte("x"), Version: 1, Epoch: 1}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("a write before any claim: %v, want ErrFenced", err)
	}
	if _, err := s.ClaimSpot(ctx, sp, a); err != nil {
		t.Fatal(err)
	}
	want := location.SpotState{Data: []byte("v1 of a"), Version: 3, Epoch: 1}
	requireNoErr(t, s.PutSpotState(ctx, a, want))
	checkClaimView(t, s, a, 1)
	got, err := s.GetSpotState(ctx, "game", "player", "st-1")
	if err != nil || string(got.Data) != string(want.Data) || got.Version != 3 || got.Epoch != 1 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := s.PutSpotState(ctx, a, location.SpotState{Data: []byte("x"), Version: 3, Epoch: 2}); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("a state epoch that is not the writer's: %v", err)
	}
	if err := s.PutSpotState(ctx, a, location.SpotState{Data: make([]byte, location.MaxSpotState+1), Epoch: 1}); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("an oversized state: %v", err)
	}
	// b takes the Spot over; a, now stale, cannot write — before b's first
	// write and after it.
	b := sp
	b.OwnerRID, b.OwnerGeneration, b.Epoch = "b", 7, 2
	if _, err := s.ClaimSpot(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSpotState(ctx, a, location.SpotState{Data: []byte("late a"), Version: 3, Epoch: 1}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("a stale owner's write: %v, want ErrFenced", err)
	}
	requireNoErr(t, s.PutSpotState(ctx, b, location.SpotState{Data: []byte("b"), Version: 3, Epoch: 2}))
	if err := s.PutSpotState(ctx, a, location.SpotState{Data: []byte("late a"), Version: 3, Epoch: 1}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("a stale owner's write after the new owner's: %v, want ErrFenced", err)
	}
	if got, _ := s.GetSpotState(ctx, "game", "player", "st-1"); string(got.Data) != "b" || got.Epoch != 2 {
		t.Fatalf("state %+v, want b's", got)
	}
	if e, err := s.SpotStateEpoch(ctx, "game", "player", "st-1"); err != nil || e != 2 {
		t.Fatalf("state epoch %d %v, want b's 2", e, err)
	}
	checkClaimView(t, s, b, 2)
	if _, err := s.SpotStateEpoch(ctx, "game", "", "st-1"); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("state epoch of an invalid spot: %v", err)
	}
	// Released: nobody owns it, nobody writes; the state stays.
	requireNoErr(t, s.ReleaseSpot(ctx, b))
	if err := s.PutSpotState(ctx, b, location.SpotState{Data: []byte("after release"), Version: 3, Epoch: 2}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("a write after release: %v, want ErrFenced", err)
	}
	if got, _ := s.GetSpotState(ctx, "game", "player", "st-1"); string(got.Data) != "b" {
		t.Fatalf("state after release %+v", got)
	}
	rec, err := s.SpotRecord(ctx, "game", "player", "st-1")
	requireNoErr(t, err)
	checkClaimView(t, s, rec, 2)
}

// checkClaimView: a store that reads a Spot's record with its state's
// epoch in one step (location.SpotClaimReader) answers what SpotRecord and
// SpotStateEpoch answer (epoch 0: no state).
func checkClaimView(t *testing.T, s location.Store, want location.Ownership, epoch uint64) {
	t.Helper()
	v, ok := s.(location.SpotClaimReader)
	if !ok {
		return
	}
	rec, e, err := v.SpotRecordAndStateEpoch(testCtx(t), want.Mesh, want.Kind, want.ID)
	if err != nil || rec != want || e != epoch {
		t.Fatalf("record and state epoch: %+v %d %v, want %+v %d", rec, e, err, want, epoch)
	}
	if _, _, err := v.SpotRecordAndStateEpoch(testCtx(t), want.Mesh, "", want.ID); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("record and state epoch of an invalid spot: %v", err)
	}
}

// testSpotClaimWithState: a store that claims a Spot and reads its state in
// one step (location.SpotStateClaimer) claims as ClaimSpotIn does — same
// record, same incarnation, ErrFenced with the current record and no
// state on a mismatch — and returns the state a GetSpotState right after
// the claim returns (none before the first write).
func testSpotClaimWithState(t *testing.T, s location.Store, _ func(time.Duration)) {
	c, ok := s.(location.SpotStateClaimer)
	if !ok {
		t.Skip("the store does not claim with the state")
	}
	ctx := testCtx(t)
	sp := location.Ownership{Mesh: "game", Kind: "player", ID: "cs-1"}
	a := sp
	a.OwnerRID, a.OwnerGeneration, a.Epoch = "a", 1, 1
	got, err := c.ClaimSpotWithState(ctx, sp, a)
	inc, ierr := s.SpotIncarnation(ctx, "game", "player", "cs-1")
	requireNoErr(t, ierr)
	if err != nil || got.Record != a || got.Found || got.StateErr != nil || got.Incarnation != inc {
		t.Fatalf("first claim: %+v %v, want record %+v, no state, incarnation %q", got, err, a, inc)
	}
	want := location.SpotState{Data: []byte("of a"), Version: 4, Epoch: 1}
	requireNoErr(t, s.PutSpotState(ctx, a, want))
	requireNoErr(t, s.ReleaseSpot(ctx, a))
	released, err := s.SpotRecord(ctx, "game", "player", "cs-1")
	requireNoErr(t, err)

	// A claim that does not match: fenced, the current record, no state.
	b := sp
	b.OwnerRID, b.OwnerGeneration, b.Epoch = "b", 2, 2
	got, err = c.ClaimSpotWithState(ctx, a, b)
	if !errors.Is(err, location.ErrFenced) || got.Record != released || got.Found {
		t.Fatalf("a mismatched claim: %+v %v, want ErrFenced with %+v and no state", got, err, released)
	}
	got, err = c.ClaimSpotWithState(ctx, released, b)
	if err != nil || got.Record != b || !got.Found || got.StateErr != nil ||
		string(got.State.Data) != "of a" || got.State.Version != 4 || got.State.Epoch != 1 {
		t.Fatalf("claim of a released spot with a state: %+v %v, want a's state", got, err)
	}
	read, err := s.GetSpotState(ctx, "game", "player", "cs-1")
	if err != nil || string(read.Data) != string(got.State.Data) || read.Version != got.State.Version || read.Epoch != got.State.Epoch {
		t.Fatalf("GetSpotState after the claim %+v %v, the claim read %+v", read, err, got.State)
	}
	if _, err := c.ClaimSpotWithState(ctx, b, location.Ownership{Mesh: "game", Kind: "", ID: "cs-1", OwnerRID: "c", OwnerGeneration: 1, Epoch: 3}); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("claim of an invalid spot: %v", err)
	}
}
