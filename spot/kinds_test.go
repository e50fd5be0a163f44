package spot_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// Kinds per Object Server: each server publishes the kinds it hosts, and
// a kind's Spots are placed, moved and drained only among its hosts.

// hosted is the state of the kinds of these tests (player, room, ...).
type hosted struct {
	N       int64
	Replies []string // "id:ok:owner", "id:notarget" or "id:other:err" of async calls
}

// spotCalls asks a Spot to call the Spots (Kind, IDs) asynchronously.
type spotCalls struct {
	Kind string
	IDs  []string
}

var (
	hAddP     = wire.NewPacket[int64, int64]("h-add")
	hAsyncP   = wire.NewPacket[spotCalls, struct{}]("h-async")
	hRepliesP = wire.NewPacket[struct{}, []string]("h-replies")
)

// hostedKind declares kind name; persistent ones move on a drain.
func hostedKind(name string, persistent bool) *spot.Kind[hosted] {
	k := spot.NewKind(name, func(string) *hosted { return &hosted{} })
	var replies *spot.Replies // set below, before the kind is enabled
	spot.On(k, hAddP, func(_ *spot.Context, s *hosted, n int64) (int64, error) { s.N += n; return s.N, nil })
	spot.On(k, hAsyncP, func(c *spot.Context, s *hosted, r spotCalls) (struct{}, error) {
		body := mustEncB(hAddP, 1)
		for _, id := range r.IDs {
			if err := replies.CallSpot(c, r.Kind, id, hAddP.Name(), body, 20*time.Second, id); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	spot.On(k, hRepliesP, func(_ *spot.Context, s *hosted, _ struct{}) ([]string, error) { return s.Replies, nil })
	replies = k.OnReply(func(_ *spot.Context, s *hosted, r *spot.Reply) {
		switch {
		case r.Err == nil:
			s.Replies = append(s.Replies, fmt.Sprintf("%v:ok:%s", r.Tag, r.From))
		case errors.Is(r.Err, spot.ErrNoTarget) && strings.Contains(r.Err.Error(), "room"):
			s.Replies = append(s.Replies, fmt.Sprintf("%v:notarget", r.Tag))
		default:
			s.Replies = append(s.Replies, fmt.Sprintf("%v:other:%v", r.Tag, r.Err))
		}
	})
	if persistent {
		k.Persist(spot.Persistence{Version: 1, Interval: 50 * time.Millisecond})
	}
	return k
}

func mustEncB[Req, Resp any](p wire.Packet[Req, Resp], v Req) []byte {
	b, err := p.EncodeRequest(v)
	if err != nil {
		panic(err)
	}
	return b
}

// addTo adds n to the Spot (kind, id) through node from and returns the
// new value and who answered.
func addTo(t *testing.T, from *routemesh.Node, kind, id string, n int64) (int64, string) {
	t.Helper()
	out, res, err := spot.CallRaw(ctxT(t, 20*time.Second), from, kind, id, hAddP.Name(), mustEncB(hAddP, n))
	if err != nil {
		t.Fatalf("%s/%s from %s: %v", kind, id, from.RID(), err)
	}
	v, err := hAddP.DecodeReply(out)
	if err != nil {
		t.Fatal(err)
	}
	return v, res.Owner
}

// threeServers starts A (player), B (room), C (player + room) and an
// Object Client on store.
func threeServers(t *testing.T, store location.Store, persistent bool) (a, b, c, cl *routemesh.Node) {
	t.Helper()
	server := func(prefix string, kinds ...string) *routemesh.Node {
		var regs []spot.Registration
		for _, k := range kinds {
			regs = append(regs, hostedKind(k, persistent))
		}
		_, n := startNode(t, store, prefix, nodeOpts{role: routemesh.ObjectServer, kinds: regs})
		return n
	}
	a, b, c = server("osa", "player"), server("osb", "room"), server("osc", "player", "room")
	_, cl = startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, a, b, c, cl)
	return a, b, c, cl
}

func notHosted(t *testing.T, n *routemesh.Node) uint64 {
	t.Helper()
	st, err := spot.StatsOf(n)
	if err != nil {
		t.Fatal(err)
	}
	return st.NotHosted
}

func TestKinds_SpotsLandOnlyWhereTheirKindIsHosted(t *testing.T) {
	store := location.NewMemory()
	a, b, c, cl := threeServers(t, store, false)
	ctx := ctxT(t, 30*time.Second)

	// Each server's descriptor lists its kinds, sorted; the client's
	// lists none (nil: it is no Object Server).
	want := map[string][]string{a.RID(): {"player"}, b.RID(): {"room"}, c.RID(): {"player", "room"}, cl.RID(): nil}
	descs, err := store.ListDescriptors(ctx, mesh)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range descs {
		if w := want[d.RID]; !slices.Equal(d.Kinds, w) || (w == nil) != (d.Kinds == nil) {
			t.Fatalf("%s publishes kinds %q, want %q", d.RID, d.Kinds, w)
		}
	}

	hosts := map[string][]string{"player": {a.RID(), c.RID()}, "room": {b.RID(), c.RID()}}
	for kind, where := range hosts {
		seen := map[string]int{}
		for i := range 40 {
			// From the client and from a server that does not host the kind.
			for _, from := range []*routemesh.Node{cl, a, b} {
				_, owner := addTo(t, from, kind, fmt.Sprintf("%s-%d", kind, i), 1)
				if !slices.Contains(where, owner) {
					t.Fatalf("%s-%d landed on %s, which does not host %s", kind, i, owner, kind)
				}
				seen[owner]++
			}
		}
		if len(seen) != 2 {
			t.Fatalf("%s Spots on %v: placement should use both hosts %v", kind, seen, where)
		}
	}

	// Asynchronous calls from a player Spot land on the room hosts too.
	ids := []string{"ra-0", "ra-1", "ra-2", "ra-3", "ra-4", "ra-5"}
	if _, err := spot.Call(ctx, cl, "player", "caller", hAsyncP, spotCalls{Kind: "room", IDs: ids}); err != nil {
		t.Fatal(err)
	}
	replies := waitReplies(t, cl, "player", "caller", len(ids))
	for _, r := range replies {
		if f := strings.Split(r, ":"); len(f) != 3 || f[1] != "ok" || !slices.Contains(hosts["room"], f[2]) {
			t.Fatalf("async reply %q: want ok from a room host %v", r, hosts["room"])
		}
	}

	// A kind no server hosts ends at once with ErrNoTarget naming it:
	// placement finds nobody, so no server is even asked.
	_, err = spot.Call(ctx, cl, "guild", "g-1", hAddP, 1)
	if !errors.Is(err, spot.ErrNoTarget) || !strings.Contains(err.Error(), "kind guild") {
		t.Fatalf("a call for an unhosted kind: %v, want ErrNoTarget naming guild", err)
	}
	for _, n := range []*routemesh.Node{a, b, c} {
		if got := notHosted(t, n); got != 0 {
			t.Fatalf("%s answered %d calls for a kind it does not host; placement should never send one", n.RID(), got)
		}
	}
}

// waitReplies waits until the Spot (kind, id) holds n async replies.
func waitReplies(t *testing.T, from *routemesh.Node, kind, id string, n int) []string {
	t.Helper()
	var got []string
	waitFor(t, fmt.Sprintf("%d async replies on %s/%s", n, kind, id), 20*time.Second, func() bool {
		var err error
		got, err = spot.Call(ctxT(t, 20*time.Second), from, kind, id, hRepliesP, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("%d replies, want %d: %q", len(got), n, got)
	}
	return got
}

// C's drain moves its persistent Spots only to servers that host their
// kind, with their state; a move or relocation to a server that does not
// host the kind is refused before anything changes.
func TestKinds_DrainMovesOnlyToHostsOfTheKind(t *testing.T) {
	store := location.NewMemory()
	a, b, c, cl := threeServers(t, store, true)
	ctx := ctxT(t, 60*time.Second)
	onC := map[string]int{}
	for _, kind := range []string{"player", "room"} {
		for i := range 30 {
			if _, owner := addTo(t, cl, kind, fmt.Sprintf("%s-%d", kind, i), 1); owner == c.RID() {
				onC[kind]++
			}
		}
	}
	if onC["player"] == 0 || onC["room"] == 0 {
		t.Fatalf("Spots on C: %v; want some of each kind", onC)
	}

	// A player on C cannot move to B (room only).
	var player string
	for i := range 30 {
		if _, owner := addTo(t, cl, "player", fmt.Sprintf("player-%d", i), 0); owner == c.RID() {
			player = fmt.Sprintf("player-%d", i)
			break
		}
	}
	if err := spot.Move(ctx, c, "player", player, b.RID()); !errors.Is(err, spot.ErrNoTarget) || !errors.Is(err, spot.ErrUnknownKind) {
		t.Fatalf("moving a player to a room server: %v, want ErrNoTarget and ErrUnknownKind", err)
	}
	if v, owner := addTo(t, cl, "player", player, 0); v != 1 || owner != c.RID() {
		t.Fatalf("%s after a refused move: %d on %s", player, v, owner)
	}

	if err := c.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	st, _ := spot.StatsOf(c)
	if int(st.Moves) != onC["player"]+onC["room"] {
		t.Fatalf("drain moved %d Spots, want %d (%v)", st.Moves, onC["player"]+onC["room"], onC)
	}
	for _, k := range st.Kinds {
		if k.Active != 0 {
			t.Fatalf("%d %s Spots still active on C after its drain", k.Active, k.Kind)
		}
	}
	only := map[string]string{"player": a.RID(), "room": b.RID()}
	for _, kind := range []string{"player", "room"} {
		for i := range 30 {
			v, owner := addTo(t, cl, kind, fmt.Sprintf("%s-%d", kind, i), 1)
			if v != 2 || owner != only[kind] {
				t.Fatalf("%s-%d after the drain: %d on %s, want 2 on %s", kind, i, v, owner, only[kind])
			}
		}
	}
	for _, n := range []*routemesh.Node{a, b} {
		if got := notHosted(t, n); got != 0 {
			t.Fatalf("%s was asked %d times for a kind it does not host", n.RID(), got)
		}
	}
}

// Relocate to a server that hosts only some of the kinds moves those and
// leaves the others (counted as failed) for the drain.
func TestKinds_RelocateMovesOnlyTheKindsTheTargetHosts(t *testing.T) {
	store := location.NewMemory()
	_, c := startNode(t, store, "osc", nodeOpts{role: routemesh.ObjectServer,
		kinds: []spot.Registration{hostedKind("player", true), hostedKind("room", true)}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, c, cl)
	for i := range 10 {
		addTo(t, cl, "player", fmt.Sprintf("p-%d", i), 1)
		addTo(t, cl, "room", fmt.Sprintf("r-%d", i), 1)
	}
	_, b := startNode(t, store, "osb", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("room", true)}})
	waitSpots(t, c, b, cl)
	res, err := spot.Relocate(ctxT(t, 30*time.Second), c, b.RID())
	if err != nil || res.Moved != 10 || res.Failed != 10 {
		t.Fatalf("relocate: %+v, %v; want the 10 rooms moved and the 10 players left", res, err)
	}
	for i := range 10 {
		if v, owner := addTo(t, cl, "room", fmt.Sprintf("r-%d", i), 1); v != 2 || owner != b.RID() {
			t.Fatalf("r-%d: %d on %s", i, v, owner)
		}
		if v, owner := addTo(t, cl, "player", fmt.Sprintf("p-%d", i), 1); v != 2 || owner != c.RID() {
			t.Fatalf("p-%d: %d on %s", i, v, owner)
		}
	}
}

// A server restarted with one more kind publishes it, and new Spots of
// that kind are placed on it (live owners keep theirs).
func TestKinds_RestartWithOneMoreKindTakesNewSpots(t *testing.T) {
	store := location.NewMemory()
	ha, a := startNode(t, store, "osa", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("player", false)}})
	_, b := startNode(t, store, "osb", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("room", false)}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, a, b, cl)
	for i := range 10 {
		if _, owner := addTo(t, cl, "room", fmt.Sprintf("old-%d", i), 1); owner != b.RID() {
			t.Fatalf("old-%d on %s, before any other server hosts rooms", i, owner)
		}
	}
	stop(t, ha)
	_, a2 := startNode(t, store, "osa", nodeOpts{role: routemesh.ObjectServer,
		kinds: []spot.Registration{hostedKind("player", false), hostedKind("room", false)}})
	waitSpots(t, a2, b, cl)
	d, err := store.GetDescriptor(ctxT(t, 5*time.Second), mesh, a2.RID())
	if err != nil || !slices.Equal(d.Kinds, []string{"player", "room"}) {
		t.Fatalf("restarted server publishes %q, %v", d.Kinds, err)
	}
	onA2 := 0
	for i := range 40 {
		if _, owner := addTo(t, cl, "room", fmt.Sprintf("new-%d", i), 1); owner == a2.RID() {
			onA2++
		}
	}
	if onA2 == 0 {
		t.Fatal("no new room landed on the server restarted with rooms")
	}
	for i := range 10 {
		if v, owner := addTo(t, cl, "room", fmt.Sprintf("old-%d", i), 1); v != 2 || owner != b.RID() {
			t.Fatalf("old-%d: %d on %s; its live owner keeps it", i, v, owner)
		}
	}
}

// A server reached for a kind it does not host answers "kind not hosted"
// and runs nothing; the caller lists the mesh again once and places
// again; a second such answer ends the call with ErrNoTarget. Blocking
// and asynchronous calls alike. The listing is made to claim that a
// player server hosts every kind by rewriting its descriptor without
// kinds — what a server of a version before kinds per Object Server
// publishes.
func TestKinds_NotHostedRefreshesOnceThenNoTarget(t *testing.T) {
	store := location.NewMemory()
	longLease := func(mb *routemesh.MeshBuilder) { // no lapse rewrites the forged descriptor
		mb.ConfigureDiscovery(routemesh.DiscoveryConfig{DescriptorTTL: time.Minute, Poll: 100 * time.Millisecond, InboundGrace: time.Second})
	}
	_, p := startNode(t, store, "osp", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("player", false)}, more: longLease})
	_, b := startNode(t, store, "osb", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("room", false)}})
	// The client lists the mesh only when asked (WaitReady, a placement
	// that finds nobody, a "kind not hosted" answer).
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient, more: func(mb *routemesh.MeshBuilder) {
		mb.ConfigureDiscovery(routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: time.Hour, InboundGrace: time.Second})
	}})
	waitSpots(t, p, b, cl)
	ctx := ctxT(t, 60*time.Second)
	truth, err := store.GetDescriptor(ctx, mesh, p.RID())
	if err != nil || !slices.Equal(truth.Kinds, []string{"player"}) {
		t.Fatalf("player server publishes %q, %v", truth.Kinds, err)
	}
	forged := truth.Clone()
	forged.Kinds = nil
	if err := store.PutDescriptor(ctx, forged, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Every node lists the forged descriptor from now on.
	for _, n := range []*routemesh.Node{p, b, cl} {
		if err := spot.WaitReady(ctxT(t, 10*time.Second), n); err != nil {
			t.Fatal(err)
		}
	}

	// Blocking: a room placed on p is answered "not hosted" twice (once
	// before and once after the fresh listing) and ends ErrNoTarget; the
	// others land on b.
	var failed []string
	for i := range 30 {
		id := fmt.Sprintf("room-%d", i)
		before := notHosted(t, p)
		_, res, err := spot.CallRaw(ctx, cl, "room", id, hAddP.Name(), mustEncB(hAddP, 1))
		asked := notHosted(t, p) - before
		switch {
		case err == nil && res.Owner == b.RID() && asked == 0:
		case errors.Is(err, spot.ErrNoTarget) && errors.Is(err, spot.ErrUnknownKind) && strings.Contains(err.Error(), "kind room") && asked == 2:
			failed = append(failed, id)
		default:
			t.Fatalf("%s: owner %q, %v; p answered %d times", id, res.Owner, err, asked)
		}
	}
	if len(failed) == 0 || len(failed) == 30 {
		t.Fatalf("%d of 30 rooms placed on the player server; want some and not all", len(failed))
	}

	// Asynchronous, from a player Spot on p: the same rooms fail the same
	// way (p itself lists the forged descriptor).
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("room-%d", i))
	}
	before := notHosted(t, p)
	if _, err := spot.Call(ctx, cl, "player", "caller", hAsyncP, spotCalls{Kind: "room", IDs: ids}); err != nil {
		t.Fatal(err)
	}
	var asyncFailed []string
	for _, r := range waitReplies(t, cl, "player", "caller", len(ids)) {
		f := strings.Split(r, ":")
		switch {
		case len(f) == 2 && f[1] == "notarget":
			asyncFailed = append(asyncFailed, f[0])
		case len(f) == 3 && f[1] == "ok" && f[2] == b.RID():
		default:
			t.Fatalf("async reply %q", r)
		}
	}
	slices.Sort(asyncFailed)
	slices.Sort(failed)
	if !slices.Equal(asyncFailed, failed) {
		t.Fatalf("async calls failed for %q, blocking ones for %q", asyncFailed, failed)
	}
	if asked := notHosted(t, p) - before; asked != uint64(2*len(failed)) {
		t.Fatalf("p answered %d async calls \"not hosted\", want 2 for each of %d", asked, len(failed))
	}

	// The true descriptor back: while the client's listing still has the
	// forged one, its next call is answered "not hosted" once, then the
	// fresh listing sends it to b. (The store's change push may bring the
	// client the true descriptor before that call: then p is not asked at
	// all. Either way p answers at most once and the room lands on b.)
	if err := store.PutDescriptor(ctx, truth, time.Minute); err != nil {
		t.Fatal(err)
	}
	before = notHosted(t, p)
	v, owner := addTo(t, cl, "room", failed[0], 1)
	if asked := notHosted(t, p) - before; v != 1 || owner != b.RID() || asked > 1 {
		t.Fatalf("%s with a stale listing: %d on %s, p answered %d times; want 1 on b after at most one answer", failed[0], v, owner, asked)
	}
}

// The bounds: at most MaxKinds kinds per Object Server, checked at Start;
// MaxKinds kinds of the longest name are published.
func TestKinds_BoundsCheckedAtStart(t *testing.T) {
	store := location.NewMemory()
	var regs []spot.Registration
	for i := range spot.MaxKinds + 1 {
		regs = append(regs, hostedKind(fmt.Sprintf("k%03d-%s", i, strings.Repeat("x", 123)), false)) // 128 bytes
	}
	err := startErr(t, store, "os", nodeOpts{role: routemesh.ObjectServer, kinds: regs})
	if !errors.Is(err, spot.ErrConfig) {
		t.Fatalf("%d kinds: %v, want ErrConfig", len(regs), err)
	}
	_, n := startNode(t, store, "os", nodeOpts{role: routemesh.ObjectServer, kinds: regs[:spot.MaxKinds]})
	d, err := store.GetDescriptor(ctxT(t, 5*time.Second), mesh, n.RID())
	if err != nil || len(d.Kinds) != spot.MaxKinds || len(d.Kinds[0]) != 128 {
		t.Fatalf("descriptor of %d kinds: %d kinds, %v", spot.MaxKinds, len(d.Kinds), err)
	}
}

// A drain finds no other server hosting a persistent kind: those Spots are
// saved and released; calls for the kind end ErrNoTarget while nobody
// hosts it, and a server that hosts it later restores their state.
func TestKinds_DrainWithoutAnotherHostSavesAndReleases(t *testing.T) {
	store := location.NewMemory()
	_, c := startNode(t, store, "osc", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("player", true)}})
	_, b := startNode(t, store, "osb", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("room", true)}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, c, b, cl)
	for i := range 5 {
		addTo(t, cl, "player", fmt.Sprintf("p-%d", i), 1)
	}
	ctx := ctxT(t, 30*time.Second)
	if err := c.Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if st, _ := spot.StatsOf(c); st.Moves != 0 || st.Kinds[0].Active != 0 {
		t.Fatalf("drain with no other player host: %d moved, %d active", st.Moves, st.Kinds[0].Active)
	}
	if _, err := spot.Call(ctx, cl, "player", "p-0", hAddP, 1); !errors.Is(err, spot.ErrNoTarget) || !strings.Contains(err.Error(), "kind player") {
		t.Fatalf("a player call with its only host draining: %v, want ErrNoTarget naming player", err)
	}
	_, a := startNode(t, store, "osa", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{hostedKind("player", true)}})
	waitSpots(t, a, b, cl)
	for i := range 5 {
		if v, owner := addTo(t, cl, "player", fmt.Sprintf("p-%d", i), 1); v != 2 || owner != a.RID() {
			t.Fatalf("p-%d on the new player host: %d on %s, want 2 on %s", i, v, owner, a.RID())
		}
	}
}
