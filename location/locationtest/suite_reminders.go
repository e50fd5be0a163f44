package locationtest

import (
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// Reminder conformance: records under the Spot, fenced writes, a due-time
// index read by part and reconciled against the records.

func reminders(t *testing.T, s location.Store) location.SpotReminders {
	t.Helper()
	r, ok := s.(location.SpotReminders)
	if !ok {
		t.Fatalf("%T does not keep reminders", s)
	}
	return r
}

// dueAll reads every due entry of kind's index parts at now.
func dueAll(t *testing.T, r location.SpotReminders, mesh, kind string, now time.Time) []location.DueReminder {
	t.Helper()
	var out []location.DueReminder
	for p := range location.ReminderParts {
		d, err := r.DueReminders(testCtx(t), mesh, kind, p, 100, now)
		requireNoErr(t, err)
		out = append(out, d...)
	}
	return out
}

func testReminderPutListDelete(t *testing.T, s location.Store, _ func(time.Duration)) {
	r, ctx := reminders(t, s), testCtx(t)
	sp := spot("m", "room", "r1")
	due := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	a, err := r.PutReminder(ctx, sp, location.Reminder{Name: "a", Due: due, Period: time.Minute, Payload: []byte("x y")})
	requireNoErr(t, err)
	b, err := r.PutReminder(ctx, sp, location.Reminder{Name: "b", Due: due.Add(time.Second)})
	requireNoErr(t, err)
	if a.Seq == 0 || b.Seq == a.Seq {
		t.Fatalf("registrations %d and %d", a.Seq, b.Seq)
	}
	list, err := r.ListReminders(ctx, "m", "room", "r1")
	requireNoErr(t, err)
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" || !list[0].Due.Equal(due) ||
		list[0].Period != time.Minute || string(list[0].Payload) != "x y" || list[0].Seq != a.Seq || list[1].Period != 0 {
		t.Fatalf("list %+v", list)
	}
	got, err := r.GetReminder(ctx, "m", "room", "r1", "b")
	requireNoErr(t, err)
	if got.Seq != b.Seq || !got.Due.Equal(due.Add(time.Second)) {
		t.Fatalf("get %+v", got)
	}
	// Nothing is due before its time; both are after.
	if d := dueAll(t, r, "m", "room", time.Now()); len(d) != 0 {
		t.Fatalf("due now: %+v", d)
	}
	d := dueAll(t, r, "m", "room", due.Add(2*time.Second))
	if len(d) != 2 || d[0].ID != "r1" || d[0].Kind != "room" {
		t.Fatalf("due later: %+v", d)
	}
	// Put again: a new registration; the old index entry is gone.
	a2, err := r.PutReminder(ctx, sp, location.Reminder{Name: "a", Due: due, Period: time.Minute})
	requireNoErr(t, err)
	if a2.Seq == a.Seq {
		t.Fatal("a put again kept its registration")
	}
	d = dueAll(t, r, "m", "room", due.Add(2*time.Second))
	if len(d) != 2 {
		t.Fatalf("after a put again: %+v", d)
	}
	for _, e := range d {
		if e.Name == "a" && e.Seq != a2.Seq {
			t.Fatalf("index holds registration %d of a, want %d", e.Seq, a2.Seq)
		}
	}
	ok, err := r.DeleteReminder(ctx, sp, "a")
	requireNoErr(t, err)
	if !ok {
		t.Fatal("delete of a: none")
	}
	ok, err = r.DeleteReminder(ctx, sp, "a")
	requireNoErr(t, err)
	if ok {
		t.Fatal("second delete of a found one")
	}
	if _, err := r.GetReminder(ctx, "m", "room", "r1", "a"); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("get of a deleted reminder: %v", err)
	}
	if d := dueAll(t, r, "m", "room", due.Add(2*time.Second)); len(d) != 1 || d[0].Name != "b" {
		t.Fatalf("after delete: %+v", d)
	}
	// Other Spots and meshes see none of it.
	if l, err := r.ListReminders(ctx, "m", "room", "r2"); err != nil || len(l) != 0 {
		t.Fatalf("other spot: %+v %v", l, err)
	}
	if d := dueAll(t, r, "other", "room", due.Add(2*time.Second)); len(d) != 0 {
		t.Fatalf("other mesh: %+v", d)
	}
	// Bad input is ErrInvalid.
	for _, bad := range []location.Reminder{{Name: "", Due: due}, {Name: "x"}, {Name: "x", Due: due, Period: -1},
		{Name: "x", Due: due, Payload: make([]byte, location.MaxReminderPayload+1)}} {
		if _, err := r.PutReminder(ctx, sp, bad); !errors.Is(err, location.ErrInvalid) {
			t.Fatalf("put %+v: %v", bad, err)
		}
	}
}

func testReminderLimit(t *testing.T, s location.Store, _ func(time.Duration)) {
	r, ctx := reminders(t, s), testCtx(t)
	sp := spot("m", "room", "full")
	due := time.Now().Add(time.Hour)
	for i := range location.MaxSpotReminders {
		_, err := r.PutReminder(ctx, sp, location.Reminder{Name: string(rune('A' + i)), Due: due})
		requireNoErr(t, err)
	}
	if _, err := r.PutReminder(ctx, sp, location.Reminder{Name: "one-more", Due: due}); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("reminder %d: %v", location.MaxSpotReminders+1, err)
	}
	// Replacing one is not one more.
	_, err := r.PutReminder(ctx, sp, location.Reminder{Name: "A", Due: due})
	requireNoErr(t, err)
}

func testReminderFenced(t *testing.T, s location.Store, _ func(time.Duration)) {
	r, ctx := reminders(t, s), testCtx(t)
	sp := spot("m", "room", "f1")
	own := claimSpot(t, s, sp, owned(sp, "n1", 1, 1))
	due := time.UnixMilli(time.Now().Add(-time.Second).UnixMilli())
	rem, err := r.PutReminder(ctx, own, location.Reminder{Name: "tick", Due: due, Period: time.Second})
	requireNoErr(t, err)

	// A stale owner writes nothing.
	stale := owned(sp, "n0", 1, 1)
	if _, err := r.PutReminder(ctx, stale, location.Reminder{Name: "x", Due: due}); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("put by a stale owner: %v", err)
	}
	if _, err := r.DeleteReminder(ctx, stale, "tick"); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("delete by a stale owner: %v", err)
	}
	next := due.Add(time.Second)
	if err := r.AdvanceReminder(ctx, stale, "tick", rem.Seq, due, next); !errors.Is(err, location.ErrFenced) {
		t.Fatalf("advance by a stale owner: %v", err)
	}
	// The owner advances once; a second advance from the same due time, or
	// of another registration, finds it changed.
	requireNoErr(t, r.AdvanceReminder(ctx, own, "tick", rem.Seq, due, next))
	if err := r.AdvanceReminder(ctx, own, "tick", rem.Seq, due, next.Add(time.Second)); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("advance twice: %v", err)
	}
	if err := r.AdvanceReminder(ctx, own, "tick", rem.Seq+1000, next, next.Add(time.Second)); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("advance of another registration: %v", err)
	}
	got, err := r.GetReminder(ctx, "m", "room", "f1", "tick")
	requireNoErr(t, err)
	if !got.Due.Equal(next) || got.Seq != rem.Seq || got.Period != time.Second {
		t.Fatalf("advanced: %+v", got)
	}
	// The index followed: due at next, not before.
	if d := dueAll(t, r, "m", "room", next.Add(-time.Millisecond)); len(d) != 0 {
		t.Fatalf("due before next: %+v", d)
	}
	if d := dueAll(t, r, "m", "room", next); len(d) != 1 || !d[0].Due.Equal(next) {
		t.Fatalf("due at next: %+v", d)
	}
	// A one-shot advance (zero next) removes it, record and entry.
	requireNoErr(t, r.AdvanceReminder(ctx, own, "tick", rem.Seq, next, time.Time{}))
	if _, err := r.GetReminder(ctx, "m", "room", "f1", "tick"); !errors.Is(err, location.ErrNotFound) {
		t.Fatalf("after a last firing: %v", err)
	}
	if d := dueAll(t, r, "m", "room", next.Add(time.Hour)); len(d) != 0 {
		t.Fatalf("index after a last firing: %+v", d)
	}
	// An operator's write (no owner) is not fenced.
	_, err = r.PutReminder(ctx, sp, location.Reminder{Name: "op", Due: due})
	requireNoErr(t, err)
	ok, err := r.DeleteReminder(ctx, sp, "op")
	requireNoErr(t, err)
	if !ok {
		t.Fatal("operator delete found none")
	}
}

func testReminderIndexFix(t *testing.T, s location.Store, _ func(time.Duration)) {
	r, ctx := reminders(t, s), testCtx(t)
	sp := spot("m", "room", "x1")
	due := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	rem, err := r.PutReminder(ctx, sp, location.Reminder{Name: "n", Due: due, Period: time.Minute})
	requireNoErr(t, err)
	d := dueAll(t, r, "m", "room", time.Now())
	if len(d) != 1 || d[0].Seq != rem.Seq || d[0].Name != "n" || d[0].ID != "x1" {
		t.Fatalf("due: %+v", d)
	}
	e := d[0]
	// An entry only moves later.
	requireNoErr(t, r.FixReminderIndex(ctx, "m", e, due.Add(-time.Hour)))
	if d := dueAll(t, r, "m", "room", due); len(d) != 1 {
		t.Fatalf("an entry moved earlier: %+v", d)
	}
	later := due.Add(2 * time.Hour)
	requireNoErr(t, r.FixReminderIndex(ctx, "m", e, later))
	if d := dueAll(t, r, "m", "room", time.Now()); len(d) != 0 {
		t.Fatalf("a fixed entry is still due: %+v", d)
	}
	// Removed, it is not added back by a fix.
	requireNoErr(t, r.FixReminderIndex(ctx, "m", e, time.Time{}))
	requireNoErr(t, r.FixReminderIndex(ctx, "m", e, later.Add(time.Hour)))
	if d := dueAll(t, r, "m", "room", later.Add(24*time.Hour)); len(d) != 0 {
		t.Fatalf("a removed entry came back: %+v", d)
	}
	// The limit holds; earliest first.
	for i := range 5 {
		_, err := r.PutReminder(ctx, spot("m", "lim", "same"), location.Reminder{Name: string(rune('a' + i)), Due: due.Add(time.Duration(i) * time.Second)})
		requireNoErr(t, err)
	}
	p := location.ReminderPart("same")
	got, err := r.DueReminders(ctx, "m", "lim", p, 3, time.Now())
	requireNoErr(t, err)
	if len(got) != 3 || got[0].Name != "a" || got[2].Name != "c" {
		t.Fatalf("limit 3: %+v", got)
	}
	if _, err := r.DueReminders(ctx, "m", "lim", location.ReminderParts, 3, time.Now()); !errors.Is(err, location.ErrInvalid) {
		t.Fatalf("part out of range: %v", err)
	}
}
