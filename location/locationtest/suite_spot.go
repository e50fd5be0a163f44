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
