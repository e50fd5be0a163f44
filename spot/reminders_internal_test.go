package spot

import (
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// The firing's decision: the record decides, never the index entry.
func TestDecideFiring(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	due := now.Add(-time.Second)
	e := location.DueReminder{Kind: "k", ID: "i", Name: "n", Seq: 7, Due: due}
	rec := location.Reminder{Name: "n", Seq: 7, Due: due, Period: time.Minute}
	mk := func(seq uint64, d time.Time) remMark { return remMark{seq: seq, due: d.UnixMilli()} }
	later := rec
	later.Due = now.Add(time.Second)
	other := rec
	other.Seq = 8
	for _, tc := range []struct {
		name   string
		rec    location.Reminder
		found  bool
		mark   remMark
		marked bool
		want   int
	}{
		{"gone", location.Reminder{}, false, remMark{}, false, remDrop},
		{"another registration", other, true, remMark{}, false, remDrop},
		{"due later", later, true, remMark{}, false, remLate},
		{"due, never fired", rec, true, remMark{}, false, remRun},
		{"due, fired in this epoch", rec, true, mk(7, due), true, remWrite},
		{"due, an older due time fired", rec, true, mk(7, due.Add(-time.Minute)), true, remRun},
		{"due, another registration fired", rec, true, mk(6, due), true, remRun},
		{"due exactly now", location.Reminder{Name: "n", Seq: 7, Due: now}, true, remMark{}, false, remRun},
	} {
		if got := decideFiring(e, tc.rec, tc.found, tc.mark, tc.marked, now); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Fixed rate: the next due time is on the grid after now, the skipped ones
// counted; a one-shot has none.
func TestNextDue(t *testing.T) {
	base := time.UnixMilli(1_000_000)
	rec := location.Reminder{Due: base, Period: time.Second}
	for _, tc := range []struct {
		now    time.Time
		want   time.Time
		merged uint64
	}{
		{base, base.Add(time.Second), 0},
		{base.Add(999 * time.Millisecond), base.Add(time.Second), 0},
		{base.Add(time.Second), base.Add(2 * time.Second), 1},
		{base.Add(3500 * time.Millisecond), base.Add(4 * time.Second), 3},
	} {
		got, merged := nextDue(rec, tc.now)
		if !got.Equal(tc.want) || merged != tc.merged {
			t.Errorf("now +%v: next +%v merged %d, want +%v merged %d", tc.now.Sub(base), got.Sub(base), merged, tc.want.Sub(base), tc.merged)
		}
	}
	if next, _ := nextDue(location.Reminder{Due: base}, base.Add(time.Hour)); !next.IsZero() {
		t.Errorf("a one-shot's next due time %v", next)
	}
}
