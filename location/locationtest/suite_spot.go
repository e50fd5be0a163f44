package locationtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// Spot record conformance: compare-and-set on (owner RID, generation,
// epoch), an absent record equal to {"", 0, 0}, epochs that never decrease.

// spot is the record of a Spot without owner at epoch 0 (absent).
func spot(mesh, kind, id string) location.Ownership {
	return location.Ownership{Mesh: mesh, Kind: kind, ID: id}
}

func owned(sp location.Ownership, rid string, gen, epoch uint64) location.Ownership {
	sp.OwnerRID, sp.OwnerGeneration, sp.Epoch = rid, gen, epoch
	return sp
}

func released(o location.Ownership) location.Ownership {
	o.OwnerRID, o.OwnerGeneration = "", 0
	return o
}

func requireRecord(t *testing.T, s location.Store, want location.Ownership) {
	t.Helper()
	got, err := s.SpotRecord(testCtx(t), want.Mesh, want.Kind, want.ID)
	requireNoErr(t, err)
	if got != want {
		t.Fatalf("spot record %+v, want %+v", got, want)
	}
}

// claimSpot claims from expect to next and fails unless it succeeds.
func claimSpot(t *testing.T, s location.Store, expect, next location.Ownership) location.Ownership {
	t.Helper()
	got, err := s.ClaimSpot(testCtx(t), expect, next)
	requireNoErr(t, err)
	if got != next {
		t.Fatalf("claim returned %+v, want %+v", got, next)
	}
	return got
}

// requireFenced checks a compare-and-set's answer: ErrFenced, and (when
// cur is not nil) the current record.
func requireFenced(t *testing.T, got location.Ownership, err error, cur *location.Ownership) {
	t.Helper()
	requireIs(t, err, location.ErrFenced)
	if cur != nil && got != *cur {
		t.Fatalf("fenced: returned %+v, want the current record %+v", got, *cur)
	}
}

func testSpotClaimAbsent(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	requireRecord(t, s, sp)
	o := claimSpot(t, s, sp, owned(sp, "a", 1<<63+5, 1)) // generation beyond float64 precision
	requireRecord(t, s, o)
	// The record exists now: expecting it absent is a mismatch.
	got, err := s.ClaimSpot(ctx, sp, owned(sp, "b", 2, 1))
	requireFenced(t, got, err, &o)
	requireRecord(t, s, o)
	// A first epoch may start higher (the epoch of persisted state + 1).
	sp2 := spot("m", "room", "r2")
	claimSpot(t, s, sp2, owned(sp2, "b", 2, 42))
	requireRecord(t, s, owned(sp2, "b", 2, 42))
}

func testSpotClaimReleased(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	o1 := claimSpot(t, s, sp, owned(sp, "a", 1, 1))
	requireNoErr(t, s.ReleaseSpot(ctx, o1))
	rel := released(o1)
	requireRecord(t, s, rel) // no owner, epoch kept
	got, err := s.ClaimSpot(ctx, sp, owned(sp, "b", 2, 1))
	requireFenced(t, got, err, &rel)
	got, err = s.ClaimSpot(ctx, sp, owned(sp, "b", 2, 2))
	requireFenced(t, got, err, &rel)
	o2 := claimSpot(t, s, rel, owned(sp, "b", 2, 2))
	requireRecord(t, s, o2)
	// The former owner may claim again after a release, at a new epoch.
	requireNoErr(t, s.ReleaseSpot(ctx, o2))
	claimSpot(t, s, released(o2), owned(sp, "a", 1, 9))
}

func testSpotClaimMismatch(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	o := claimSpot(t, s, sp, owned(sp, "a", 1, 5))
	for name, wrong := range map[string]location.Ownership{
		"owner RID":    owned(sp, "b", 1, 5),
		"generation":   owned(sp, "a", 2, 5),
		"older epoch":  owned(sp, "a", 1, 4),
		"newer epoch":  owned(sp, "a", 1, 6),
		"no owner":     released(o),
		"absent":       sp,
		"other holder": owned(sp, "c", 3, 5),
	} {
		got, err := s.ClaimSpot(ctx, wrong, owned(sp, "c", 3, wrong.Epoch+1))
		if !errors.Is(err, location.ErrFenced) || got != o {
			t.Errorf("claim expecting a wrong %s: %+v %v, want ErrFenced with %+v", name, got, err, o)
		}
	}
	requireRecord(t, s, o)
	// The right expectation wins, also when it is the recorded owner
	// claiming anew at a higher epoch.
	claimSpot(t, s, o, owned(sp, "a", 1, 6))
}

func testSpotClaimConcurrent(t *testing.T, s location.Store, _ func(time.Duration)) {
	sp := spot("m", "player", "42")
	const n = 24
	race := func(expect location.Ownership, epoch uint64) location.Ownership {
		t.Helper()
		type result struct {
			o   location.Ownership
			err error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				o, err := s.ClaimSpot(testCtx(t), expect, owned(sp, fmt.Sprintf("n%02d", i), uint64(100+i), epoch))
				results[i] = result{o, err}
			})
		}
		close(start)
		wg.Wait()
		var winner location.Ownership
		wins := 0
		for _, r := range results {
			if r.err == nil {
				wins++
				winner = r.o
			}
		}
		if wins != 1 {
			t.Fatalf("%d claims won, want exactly 1: %+v", wins, results)
		}
		for i, r := range results {
			if r.err != nil && (!errors.Is(r.err, location.ErrFenced) || r.o != winner) {
				t.Fatalf("claimer %d: %+v %v, want ErrFenced with the winner %+v", i, r.o, r.err, winner)
			}
		}
		requireRecord(t, s, winner)
		return winner
	}
	first := race(sp, 1)
	// The recorded owner is gone (as a claimer found out): everybody
	// claims from its record; again exactly one wins.
	second := race(first, 2)
	if second.Epoch != 2 {
		t.Fatalf("second winner %+v", second)
	}
}

func testSpotReleaseCompares(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	o := claimSpot(t, s, sp, owned(sp, "a", 1, 3))
	for name, wrong := range map[string]location.Ownership{
		"owner RID":   owned(sp, "b", 1, 3),
		"generation":  owned(sp, "a", 2, 3),
		"older epoch": owned(sp, "a", 1, 2),
		"newer epoch": owned(sp, "a", 1, 4),
	} {
		if err := s.ReleaseSpot(ctx, wrong); !errors.Is(err, location.ErrFenced) {
			t.Errorf("release with a wrong %s: %v, want ErrFenced", name, err)
		}
	}
	requireRecord(t, s, o)
	requireNoErr(t, s.ReleaseSpot(ctx, o))
	requireRecord(t, s, released(o))
	requireIs(t, s.ReleaseSpot(ctx, o), location.ErrFenced)
	requireRecord(t, s, released(o))
	requireIs(t, s.ReleaseSpot(ctx, owned(spot("m", "room", "never"), "a", 1, 1)), location.ErrFenced)
	requireRecord(t, s, spot("m", "room", "never"))
}

func testSpotTransferCompares(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	o1 := claimSpot(t, s, sp, owned(sp, "a", 1, 1))
	for name, wrong := range map[string]location.Ownership{
		"owner RID":   owned(sp, "b", 1, 1),
		"generation":  owned(sp, "a", 2, 1),
		"newer epoch": owned(sp, "a", 1, 2),
	} {
		got, err := s.TransferSpot(ctx, wrong, "c", 3)
		if !errors.Is(err, location.ErrFenced) || got != o1 {
			t.Errorf("transfer with a wrong %s: %+v %v, want ErrFenced with %+v", name, got, err, o1)
		}
	}
	requireRecord(t, s, o1)
	o2, err := s.TransferSpot(ctx, o1, "b", 2)
	requireNoErr(t, err)
	if want := owned(sp, "b", 2, 2); o2 != want {
		t.Fatalf("transfer %+v, want %+v", o2, want)
	}
	requireRecord(t, s, o2)
	got, err := s.TransferSpot(ctx, o1, "c", 3) // a stale holder
	requireFenced(t, got, err, &o2)
	o3, err := s.TransferSpot(ctx, o2, "c", 1<<63+7)
	requireNoErr(t, err)
	if want := owned(sp, "c", 1<<63+7, 3); o3 != want {
		t.Fatalf("second transfer %+v, want %+v", o3, want)
	}
	// Released or absent records cannot be transferred.
	requireNoErr(t, s.ReleaseSpot(ctx, o3))
	rel := released(o3)
	got, err = s.TransferSpot(ctx, o3, "a", 1)
	requireFenced(t, got, err, &rel)
	never := spot("m", "room", "never")
	got, err = s.TransferSpot(ctx, owned(never, "a", 1, 1), "b", 2)
	requireFenced(t, got, err, &never)
	requireRecord(t, s, never)
}

func testSpotEpochsNeverDecrease(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	sp := spot("m", "room", "r1")
	cur := sp
	last := uint64(0)
	step := func(next location.Ownership, err error) {
		t.Helper()
		requireNoErr(t, err)
		got, err := s.SpotRecord(ctx, sp.Mesh, sp.Kind, sp.ID)
		requireNoErr(t, err)
		if got != next || got.Epoch < last {
			t.Fatalf("record %+v after a step to %+v (last epoch %d)", got, next, last)
		}
		if got.Owned() && got.Epoch == last {
			t.Fatalf("owner changed to %+v without a new epoch", got)
		}
		cur, last = got, got.Epoch
	}
	for i := range 12 {
		rid, gen := fmt.Sprintf("n%d", i%3), uint64(i%3+1)
		switch {
		case !cur.Owned():
			next := owned(sp, rid, gen, cur.Epoch+uint64(1+i%2))
			_, err := s.ClaimSpot(ctx, cur, next)
			step(next, err)
		case i%2 == 0:
			next, err := s.TransferSpot(ctx, cur, rid, gen)
			step(next, err)
		default:
			step(released(cur), s.ReleaseSpot(ctx, cur))
		}
	}
	// A claim that would not raise the epoch is refused, whatever the
	// record holds.
	_, err := s.ClaimSpot(ctx, cur, owned(sp, "x", 1, cur.Epoch))
	requireIs(t, err, location.ErrInvalid)
	_, err = s.ClaimSpot(ctx, cur, owned(sp, "x", 1, cur.Epoch-1))
	requireIs(t, err, location.ErrInvalid)
	requireRecord(t, s, cur)
}

func testSpotMeshIsolation(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	a, b := spot("m1", "room", "r"), spot("m2", "room", "r")
	oa := claimSpot(t, s, a, owned(a, "n", 1, 1))
	requireRecord(t, s, b)
	ob := claimSpot(t, s, b, owned(b, "n", 1, 7))
	requireNoErr(t, s.ReleaseSpot(ctx, oa))
	requireRecord(t, s, ob)
	// Kinds are separate too.
	requireRecord(t, s, spot("m1", "player", "r"))

	// A lease tombstoned in one mesh is another mesh's lease of the same
	// RID and generation.
	requireLive(t, s, lease("m1", "n", 1), LongTTL, false)
	requireNoErr(t, s.CreateSpotLease(ctx, lease("m2", "n", 1), LongTTL))
	requireIs(t, s.CreateSpotLease(ctx, lease("m1", "n", 1), LongTTL), location.ErrFenced)
}

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
	// Released: nobody owns it, nobody writes; the state stays.
	requireNoErr(t, s.ReleaseSpot(ctx, b))
	if err := s.PutSpotState(ctx, b, location.SpotState{Data: []byte("after release"), Version: 3, Epoch: 2}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("a write after release: %v, want ErrFenced", err)
	}
	if got, _ := s.GetSpotState(ctx, "game", "player", "st-1"); string(got.Data) != "b" {
		t.Fatalf("state after release %+v", got)
	}
}
