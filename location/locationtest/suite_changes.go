package locationtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

// view is what a reader following a mesh holds: its descriptors by RID and
// the revision they are as of.
type view struct {
	rev   location.MeshRevision
	descs map[string]location.Descriptor
}

// apply brings v to ch's revision, as a reader does.
func (v *view) apply(t *testing.T, ch location.DescriptorChanges) {
	t.Helper()
	if ch.Full {
		if len(ch.Gone) != 0 {
			t.Fatalf("a full answer lists gone RIDs %v", ch.Gone)
		}
		v.descs = map[string]location.Descriptor{}
	}
	if !slices.IsSortedFunc(ch.Put, func(a, b location.Descriptor) int { return strings.Compare(a.RID, b.RID) }) ||
		!slices.IsSorted(ch.Gone) {
		t.Fatalf("changes not sorted: %v %v", rids(ch.Put), ch.Gone)
	}
	for _, d := range ch.Put {
		v.descs[d.RID] = d
	}
	for _, rid := range ch.Gone {
		delete(v.descs, rid)
	}
	v.rev = ch.Revision
}

// follow reads the changes since v's revision and applies them.
func (v *view) follow(t *testing.T, s location.Store, mesh string) location.DescriptorChanges {
	t.Helper()
	ch, err := s.DescriptorChanges(testCtx(t), mesh, v.rev)
	requireNoErr(t, err)
	v.apply(t, ch)
	return ch
}

// requireMatches checks v against a full listing of the store.
func (v *view) requireMatches(t *testing.T, s location.Store, mesh string) {
	t.Helper()
	list, err := s.ListDescriptors(testCtx(t), mesh)
	requireNoErr(t, err)
	if !slices.Equal(rids(list), slices.Sorted(maps.Keys(v.descs))) {
		t.Fatalf("view holds %v, the store lists %v", slices.Sorted(maps.Keys(v.descs)), rids(list))
	}
	for _, d := range list {
		requireDescriptor(t, v.descs[d.RID], d)
	}
}

func revisionOf(t *testing.T, s location.Store, mesh string) location.MeshRevision {
	t.Helper()
	rev, err := s.DescriptorRevision(testCtx(t), mesh)
	requireNoErr(t, err)
	return rev
}

// requireDelta checks that ch is a delta of exactly put and gone.
func requireDelta(t *testing.T, what string, ch location.DescriptorChanges, put, gone []string) {
	t.Helper()
	if ch.Full || !slices.Equal(rids(ch.Put), put) || !slices.Equal(ch.Gone, gone) {
		t.Fatalf("%s: changes full=%v put %v gone %v, want a delta of put %v gone %v", what, ch.Full, rids(ch.Put), ch.Gone, put, gone)
	}
}

// A reader follows a mesh from the zero revision by changes alone: every
// put, change and delete moves the revision and shows in the next answer,
// a renewal does neither, and the view always matches a full listing.
func testDescriptorChanges(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	v := &view{descs: map[string]location.Descriptor{}}
	ch := v.follow(t, s, "m")
	if len(ch.Put) != 0 || len(ch.Gone) != 0 {
		t.Fatalf("empty mesh: %+v", ch)
	}
	a, b := Desc("m", "a", 1, 1), Desc("m", "b", 2, 1)
	b.Kinds = []string{"room"}
	put(t, s, a, LongTTL)
	put(t, s, b, LongTTL)
	put(t, s, Desc("other", "a", 3, 1), LongTTL)
	v.follow(t, s, "m")
	v.requireMatches(t, s, "m")
	r1 := revisionOf(t, s, "m")
	if r1 != v.rev || r1.IsZero() {
		t.Fatalf("revision %v, the changes answered %v", r1, v.rev)
	}

	// Renewals move nothing: by Renew, or by a put of the same content.
	requireNoErr(t, s.RenewDescriptor(ctx, "m", "a", 1, LongTTL))
	put(t, s, b, LongTTL)
	if r := revisionOf(t, s, "m"); r != r1 {
		t.Fatalf("a renewal moved the revision %v → %v", r1, r)
	}
	requireDelta(t, "nothing changed", v.follow(t, s, "m"), nil, nil)

	// A change shows alone.
	a.Revision, a.Servers = 2, map[string]uint16{"match": 7}
	put(t, s, a, LongTTL)
	r2 := revisionOf(t, s, "m")
	if r2.Epoch != r1.Epoch || r2.Seq <= r1.Seq {
		t.Fatalf("a change moved the revision %v → %v", r1, r2)
	}
	requireDelta(t, "a changed", v.follow(t, s, "m"), []string{"a"}, nil)
	requireDescriptor(t, v.descs["a"], a)

	// A delete, a new RID and a new lifecycle of an old one.
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", "b", 2))
	c := Desc("m", "c", 4, 1)
	put(t, s, c, LongTTL)
	a2 := Desc("m", "a", 5, 1)
	put(t, s, a2, LongTTL)
	requireDelta(t, "b gone, c new, a reborn", v.follow(t, s, "m"), []string{"a", "c"}, []string{"b"})
	v.requireMatches(t, s, "m")

	// Gone and back: only present.
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", "c", 4))
	put(t, s, c, LongTTL)
	requireDelta(t, "c gone and back", v.follow(t, s, "m"), []string{"c"}, nil)

	// The other mesh never moved this one.
	put(t, s, Desc("other", "z", 6, 1), LongTTL)
	requireDelta(t, "other mesh written", v.follow(t, s, "m"), nil, nil)

	// A revision the store cannot answer from gets everything.
	for name, since := range map[string]location.MeshRevision{
		"zero":          {},
		"another epoch": {Epoch: v.rev.Epoch + "x", Seq: v.rev.Seq},
		"ahead":         {Epoch: v.rev.Epoch, Seq: v.rev.Seq + 100},
	} {
		ch, err := s.DescriptorChanges(ctx, "m", since)
		requireNoErr(t, err)
		if !ch.Full || !slices.Equal(rids(ch.Put), []string{"a", "c"}) || len(ch.Gone) != 0 || ch.Revision != v.rev {
			t.Fatalf("since %s: %+v, want everything, full, at %v", name, ch, v.rev)
		}
	}
}

// Lapsed leases leave by ExpireDescriptors (or any sweep of the store) as
// deletes: the revision moves and a reader sees them gone.
func testDescriptorExpiry(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	put(t, s, Desc("m", "short", 1, 1), ShortTTL)
	put(t, s, Desc("m", "long", 1, 1), LongTTL)
	put(t, s, Desc("m", "renewed", 1, 1), ShortTTL)
	requireNoErr(t, s.RenewDescriptor(ctx, "m", "renewed", 1, LongTTL))
	v := &view{descs: map[string]location.Descriptor{}}
	v.follow(t, s, "m")
	removed, live, err := s.ExpireDescriptors(ctx, "m")
	requireNoErr(t, err)
	if removed != 0 || live != 3 {
		t.Fatalf("sweep before expiry: removed %d live %d, want 0 and 3", removed, live)
	}
	expire(ShortTTL)
	total := 0
	WaitFor(t, "the short lease to be swept", func() bool {
		removed, live, err = s.ExpireDescriptors(ctx, "m")
		total += removed
		return err == nil && total == 1 && live == 2
	})
	requireDelta(t, "short expired", v.follow(t, s, "m"), nil, []string{"short"})
	v.requireMatches(t, s, "m")
	removed, live, err = s.ExpireDescriptors(ctx, "m")
	if err != nil || removed != 0 || live != 2 {
		t.Fatalf("second sweep: removed %d live %d %v", removed, live, err)
	}
	if _, live, err := s.ExpireDescriptors(ctx, "empty"); err != nil || live != 0 {
		t.Fatalf("sweep of an empty mesh: live %d %v", live, err)
	}
}

// A reader further behind than the change log keeps gets a full answer,
// never a wrong delta.
func testDescriptorChangesLogBound(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	put(t, s, Desc("m", "keep", 1, 1), LongTTL)
	v := &view{descs: map[string]location.Descriptor{}}
	v.follow(t, s, "m")
	old := v.rev
	const churn = 1100 // more removals than any store keeps (1024)
	for i := range churn {
		rid := fmt.Sprintf("churn-%04d", i)
		put(t, s, Desc("m", rid, 1, 1), LongTTL)
		requireNoErr(t, s.DeleteDescriptor(ctx, "m", rid, 1))
	}
	ch, err := s.DescriptorChanges(ctx, "m", old)
	requireNoErr(t, err)
	if !ch.Full || !slices.Equal(rids(ch.Put), []string{"keep"}) {
		t.Fatalf("reader %d removals behind: full=%v put %v gone %d, want a full answer of [keep]", churn, ch.Full, rids(ch.Put), len(ch.Gone))
	}
	// A recent reader still gets a delta.
	recent := revisionOf(t, s, "m")
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", "keep", 1))
	ch, err = s.DescriptorChanges(ctx, "m", recent)
	requireNoErr(t, err)
	requireDelta(t, "recent reader", ch, nil, []string{"keep"})
}

// closedChanges checks the change-log operations of a closed store.
func closedChanges(t *testing.T, s location.Store) {
	ctx := context.Background()
	_, err := s.DescriptorRevision(ctx, "m")
	requireIs(t, err, location.ErrClosed)
	_, err = s.DescriptorChanges(ctx, "m", location.MeshRevision{})
	requireIs(t, err, location.ErrClosed)
	_, _, err = s.ExpireDescriptors(ctx, "m")
	requireIs(t, err, location.ErrClosed)
}

// invalidChanges checks that the change-log operations refuse a bad mesh
// name.
func invalidChanges(t *testing.T, s location.Store) {
	ctx := testCtx(t)
	for _, mesh := range []string{"", "a{b"} {
		_, err := s.DescriptorRevision(ctx, mesh)
		requireIs(t, err, location.ErrInvalid)
		_, err = s.DescriptorChanges(ctx, mesh, location.MeshRevision{})
		requireIs(t, err, location.ErrInvalid)
		_, _, err = s.ExpireDescriptors(ctx, mesh)
		requireIs(t, err, location.ErrInvalid)
	}
}
