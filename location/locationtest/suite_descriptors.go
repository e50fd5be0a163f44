package locationtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

func testPutGetList(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	b := Desc("m", "node-b", 7, 1)
	a := Desc("m", "node-a", 1<<63+5, 3) // generation beyond float64 precision
	a.Draining = true
	a.ObjectRole = location.RoleClient
	a.Servers = nil
	b.Kinds = []string{"player", "room"}
	c := Desc("m", "node-c", 2, 1)
	c.Kinds = []string{} // an Object Server that hosts no kind (a: does not list them)
	put(t, s, b, LongTTL)
	put(t, s, a, LongTTL)
	put(t, s, c, LongTTL)

	got, err := s.GetDescriptor(ctx, "m", "node-a")
	requireNoErr(t, err)
	requireDescriptor(t, got, a)

	list, err := s.ListDescriptors(ctx, "m")
	requireNoErr(t, err)
	if !slices.Equal(rids(list), []string{"node-a", "node-b", "node-c"}) {
		t.Fatalf("list %v, want sorted [node-a node-b node-c]", rids(list))
	}
	requireDescriptor(t, list[1], b)
	requireDescriptor(t, list[2], c)

	_, err = s.GetDescriptor(ctx, "m", "nobody")
	requireIs(t, err, location.ErrNotFound)
	list, err = s.ListDescriptors(ctx, "empty-mesh")
	requireNoErr(t, err)
	if len(list) != 0 {
		t.Fatalf("empty mesh lists %v", rids(list))
	}

	// The store hands out copies: mutating a result changes nothing.
	got.Servers = map[string]uint16{"x": 1}
	again, err := s.GetDescriptor(ctx, "m", "node-b")
	requireNoErr(t, err)
	again.Servers["match"] = 1
	again.Kinds[0] = "guild"
	again, err = s.GetDescriptor(ctx, "m", "node-b")
	requireNoErr(t, err)
	requireDescriptor(t, again, b)
}

func testValidation(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	for name, mut := range map[string]func(*location.Descriptor){
		"generation 0": func(d *location.Descriptor) { d.Generation = 0 },
		"revision 0":   func(d *location.Descriptor) { d.Revision = 0 },
		"no role":      func(d *location.Descriptor) { d.ObjectRole = 0 },
		"no rid":       func(d *location.Descriptor) { d.RID = "" },
		"no mesh":      func(d *location.Descriptor) { d.Mesh = "" },
		"brace mesh":   func(d *location.Descriptor) { d.Mesh = "a}b" },
		// Size limits (doc.go): a store never holds what it would refuse
		// as corrupt when reading it back.
		"long mesh":        func(d *location.Descriptor) { d.Mesh = strings.Repeat("m", 257) },
		"long rid":         func(d *location.Descriptor) { d.RID = strings.Repeat("r", 257) },
		"long endpoint":    func(d *location.Descriptor) { d.Endpoint = strings.Repeat("e", 1025) },
		"long identity":    func(d *location.Descriptor) { d.SecurityIdentity = strings.Repeat("i", 1025) },
		"weight 10001":     func(d *location.Descriptor) { d.Servers = map[string]uint16{"match": 10001} },
		"empty server":     func(d *location.Descriptor) { d.Servers = map[string]uint16{"": 1} },
		"long server name": func(d *location.Descriptor) { d.Servers = map[string]uint16{strings.Repeat("s", 257): 1} },
		"65 kinds": func(d *location.Descriptor) {
			for i := range 65 {
				d.Kinds = append(d.Kinds, fmt.Sprintf("k%02d", i))
			}
		},
		"long kind":         func(d *location.Descriptor) { d.Kinds = []string{strings.Repeat("k", 257)} },
		"empty kind":        func(d *location.Descriptor) { d.Kinds = []string{""} },
		"kind with colon":   func(d *location.Descriptor) { d.Kinds = []string{"a:b"} },
		"kind listed twice": func(d *location.Descriptor) { d.Kinds = []string{"room", "room"} },
		"kinds unsorted":    func(d *location.Descriptor) { d.Kinds = []string{"room", "player"} },
	} {
		d := Desc("m", "n", 1, 1)
		mut(&d)
		if err := s.PutDescriptor(ctx, d, LongTTL); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
	list, err := s.ListDescriptors(ctx, "m")
	requireNoErr(t, err)
	if len(list) != 0 {
		t.Fatalf("invalid descriptors were stored: %v", rids(list))
	}
	requireIs(t, s.PutDescriptor(ctx, Desc("m", "n", 1, 1), 0), location.ErrInvalid)
	invalidChanges(t, s)
	requireIs(t, s.PutPublisher(ctx, location.Publisher{Channel: "c", RID: "p", Endpoint: "tcp://x:1"}, LongTTL), location.ErrInvalid)
	requireIs(t, s.PutPublisher(ctx, location.Publisher{Channel: "c", RID: "p", Generation: 1}, LongTTL), location.ErrInvalid)
	requireIs(t, s.PutPublisher(ctx, location.Publisher{Channel: "c", RID: strings.Repeat("p", 257), Generation: 1, Endpoint: "tcp://x:1"}, LongTTL), location.ErrInvalid)
	// The limits are inclusive.
	edge := Desc("m", strings.Repeat("r", 256), 1, 1)
	edge.Endpoint, edge.Servers = strings.Repeat("e", 1024), map[string]uint16{strings.Repeat("s", 256): 10000}
	for i := range 64 {
		edge.Kinds = append(edge.Kinds, fmt.Sprintf("%02d", i)+strings.Repeat("k", 254))
	}
	requireNoErr(t, s.PutDescriptor(ctx, edge, LongTTL))
	got, err := s.GetDescriptor(ctx, "m", edge.RID)
	requireNoErr(t, err)
	requireDescriptor(t, got, edge)
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", edge.RID, 1))
}

func testRevision(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	d := Desc("m", "n", 9, 1)
	put(t, s, d, LongTTL)
	d.Revision, d.Servers = 2, map[string]uint16{"match": 50}
	put(t, s, d, LongTTL)
	put(t, s, d, LongTTL) // same revision again: a lease renewal
	stale := Desc("m", "n", 9, 1)
	requireIs(t, s.PutDescriptor(ctx, stale, LongTTL), location.ErrFenced)
	got, err := s.GetDescriptor(ctx, "m", "n")
	requireNoErr(t, err)
	requireDescriptor(t, got, d)

	// A new lifecycle of the same RID replaces the old one at any revision.
	next := Desc("m", "n", 10, 1)
	put(t, s, next, LongTTL)
	got, err = s.GetDescriptor(ctx, "m", "n")
	requireNoErr(t, err)
	requireDescriptor(t, got, next)
}

func testRenewDelete(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	d := Desc("m", "n", 3, 1)
	put(t, s, d, LongTTL)
	requireNoErr(t, s.RenewDescriptor(ctx, "m", "n", 3, LongTTL))
	requireIs(t, s.RenewDescriptor(ctx, "m", "n", 4, LongTTL), location.ErrNotFound)
	requireIs(t, s.RenewDescriptor(ctx, "m", "other", 3, LongTTL), location.ErrNotFound)

	requireIs(t, s.DeleteDescriptor(ctx, "m", "n", 4), location.ErrNotFound)
	if _, err := s.GetDescriptor(ctx, "m", "n"); err != nil {
		t.Fatalf("delete with a wrong generation removed the descriptor: %v", err)
	}
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", "n", 3))
	_, err := s.GetDescriptor(ctx, "m", "n")
	requireIs(t, err, location.ErrNotFound)
	list, err := s.ListDescriptors(ctx, "m")
	requireNoErr(t, err)
	if len(list) != 0 {
		t.Fatalf("deleted descriptor still listed: %v", rids(list))
	}
	requireIs(t, s.DeleteDescriptor(ctx, "m", "n", 3), location.ErrNotFound)
	requireIs(t, s.RenewDescriptor(ctx, "m", "n", 3, LongTTL), location.ErrNotFound)
}

func testTTLExpiry(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	put(t, s, Desc("m", "short", 1, 1), ShortTTL)
	put(t, s, Desc("m", "long", 1, 1), LongTTL)
	put(t, s, Desc("m", "renewed", 1, 1), ShortTTL)
	requireNoErr(t, s.RenewDescriptor(ctx, "m", "renewed", 1, LongTTL))
	expire(ShortTTL)
	WaitFor(t, "short lease to leave the list", func() bool {
		list, err := s.ListDescriptors(ctx, "m")
		return err == nil && slices.Equal(rids(list), []string{"long", "renewed"})
	})
	_, err := s.GetDescriptor(ctx, "m", "short")
	requireIs(t, err, location.ErrNotFound)
	requireIs(t, s.RenewDescriptor(ctx, "m", "short", 1, LongTTL), location.ErrNotFound)
	// An expired lifecycle may come back with a new lease.
	put(t, s, Desc("m", "short", 1, 1), LongTTL)
}

func testWatch(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, "m")
	requireNoErr(t, err)

	put(t, s, Desc("m", "a", 1, 1), LongTTL)
	NextEvent(t, ch, location.Event{Kind: location.EventPut, Mesh: "m", RID: "a"}, nil)
	d := Desc("m", "a", 1, 2)
	put(t, s, d, LongTTL)
	NextEvent(t, ch, location.Event{Kind: location.EventPut, Mesh: "m", RID: "a"}, nil)
	requireNoErr(t, s.DeleteDescriptor(ctx, "m", "a", 1))
	NextEvent(t, ch, location.Event{Kind: location.EventDelete, Mesh: "m", RID: "a"}, nil)

	put(t, s, Desc("m", "b", 1, 1), ShortTTL)
	NextEvent(t, ch, location.Event{Kind: location.EventPut, Mesh: "m", RID: "b"}, nil)
	expire(ShortTTL)
	NextEvent(t, ch, location.Event{Kind: location.EventDelete, Mesh: "m", RID: "b"}, nil)

	cancel()
	WaitFor(t, "watch channel to close after ctx end", func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	})
}

func testWatchSlowConsumer(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	ch, err := s.Watch(ctx, "m")
	requireNoErr(t, err)
	// Nobody reads while 100 writes happen: writers must not block.
	const n = 50
	for i := range n {
		d := Desc("m", fmt.Sprintf("n%02d", i), 1, 1)
		put(t, s, d, LongTTL)
		d.Revision = 2
		put(t, s, d, LongTTL)
	}
	missing := make(map[string]bool, n)
	for i := range n {
		missing[fmt.Sprintf("n%02d", i)] = true
	}
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for len(missing) > 0 {
		select {
		case ev := <-ch:
			if ev.Kind == location.EventPut {
				delete(missing, ev.RID)
			}
		case <-deadline.C:
			t.Fatalf("no event for %d RIDs after a slow consumer caught up", len(missing))
		}
	}
}

func testPublishers(t *testing.T, s location.Store, expire func(time.Duration)) {
	ctx := testCtx(t)
	// A node descriptor and publishers sharing names must never mix.
	put(t, s, Desc("news", "p1", 1, 1), LongTTL)
	p1 := location.Publisher{Channel: "news", RID: "p1", Generation: 5, Endpoint: "tcp://127.0.0.1:9001"}
	p2 := location.Publisher{Channel: "news", RID: "p2", Generation: 6, Endpoint: "tcp://127.0.0.1:9002"}
	p3 := location.Publisher{Channel: "other", RID: "p3", Generation: 7, Endpoint: "tcp://127.0.0.1:9003"}
	short := location.Publisher{Channel: "news", RID: "p0", Generation: 8, Endpoint: "tcp://127.0.0.1:9000"}
	for _, p := range []location.Publisher{p2, p1, p3} {
		requireNoErr(t, s.PutPublisher(ctx, p, LongTTL))
	}
	requireNoErr(t, s.PutPublisher(ctx, short, ShortTTL))

	pubs, err := s.ListPublishers(ctx, "news")
	requireNoErr(t, err)
	if !slices.Equal(pubs, []location.Publisher{short, p1, p2}) {
		t.Fatalf("publishers of news %+v", pubs)
	}
	nodes, err := s.ListDescriptors(ctx, "news")
	requireNoErr(t, err)
	if !slices.Equal(rids(nodes), []string{"p1"}) {
		t.Fatalf("node descriptors of mesh news %v: publishers leaked in", rids(nodes))
	}
	pubs, err = s.ListPublishers(ctx, "nomesh")
	requireNoErr(t, err)
	if len(pubs) != 0 {
		t.Fatalf("empty channel lists %+v", pubs)
	}

	expire(ShortTTL)
	WaitFor(t, "short publisher lease to expire", func() bool {
		pubs, err := s.ListPublishers(ctx, "news")
		return err == nil && slices.Equal(pubs, []location.Publisher{p1, p2})
	})

	requireIs(t, s.DeletePublisher(ctx, "news", "p1", 99), location.ErrNotFound)
	requireNoErr(t, s.DeletePublisher(ctx, "news", "p1", 5))
	requireIs(t, s.DeletePublisher(ctx, "news", "p1", 5), location.ErrNotFound)
	pubs, err = s.ListPublishers(ctx, "news")
	requireNoErr(t, err)
	if !slices.Equal(pubs, []location.Publisher{p2}) {
		t.Fatalf("after delete %+v", pubs)
	}
	pubs, err = s.ListPublishers(ctx, "other")
	requireNoErr(t, err)
	if !slices.Equal(pubs, []location.Publisher{p3}) {
		t.Fatalf("channel other %+v", pubs)
	}
	if _, err := s.GetDescriptor(ctx, "news", "p1"); err != nil {
		t.Fatalf("deleting a publisher touched the node descriptor: %v", err)
	}
}

func testMeshIsolation(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	ch, err := s.Watch(ctx, "m1")
	requireNoErr(t, err)
	d1, d2 := Desc("m1", "n", 1, 1), Desc("m2", "n", 2, 1)
	d2.Endpoint = "tcp://10.0.0.2:1"
	put(t, s, d2, LongTTL)
	put(t, s, Desc("m2", "only-m2", 3, 1), LongTTL)
	put(t, s, d1, LongTTL)

	l1, err := s.ListDescriptors(ctx, "m1")
	requireNoErr(t, err)
	l2, err := s.ListDescriptors(ctx, "m2")
	requireNoErr(t, err)
	if len(l1) != 1 || !sameDescriptor(l1[0], d1) {
		t.Fatalf("mesh m1 lists %+v", l1)
	}
	if !slices.Equal(rids(l2), []string{"n", "only-m2"}) || !sameDescriptor(l2[0], d2) {
		t.Fatalf("mesh m2 lists %+v", l2)
	}

	requireNoErr(t, s.DeleteDescriptor(ctx, "m2", "n", 2))
	if _, err := s.GetDescriptor(ctx, "m1", "n"); err != nil {
		t.Fatalf("delete in m2 removed m1's descriptor: %v", err)
	}
	requireIs(t, s.DeleteDescriptor(ctx, "m1", "n", 2), location.ErrNotFound)

	// The m1 watch sees m1's marker and nothing of m2.
	put(t, s, Desc("m1", "marker", 4, 1), LongTTL)
	NextEvent(t, ch, location.Event{Kind: location.EventPut, Mesh: "m1", RID: "marker"}, func(ev location.Event) {
		if ev.Mesh != "m1" || ev.RID == "only-m2" {
			t.Errorf("mesh m1 watch got %+v", ev)
		}
	})
}

func testClosed(t *testing.T, s location.Store, _ func(time.Duration)) {
	ctx := testCtx(t)
	ch, err := s.Watch(ctx, "m")
	requireNoErr(t, err)
	requireNoErr(t, s.Close())
	requireNoErr(t, s.Close())
	WaitFor(t, "watch to close with the store", func() bool {
		select {
		case _, ok := <-ch:
			return !ok
		default:
			return false
		}
	})
	requireIs(t, s.PutDescriptor(ctx, Desc("m", "n", 1, 1), LongTTL), location.ErrClosed)
	_, err = s.ListDescriptors(ctx, "m")
	requireIs(t, err, location.ErrClosed)
	closedSpotDirectory(t, s)
	closedChanges(t, s)
	_, err = s.Watch(ctx, "m")
	requireIs(t, err, location.ErrClosed)
}
