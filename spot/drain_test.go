package spot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// The drain kinds: a counter whose turns start asynchronous calls, with a
// journal of activations, replies taken and last turns.

// drState is a drain counter. Broken makes its snapshot fail to encode:
// every save fails from then on (so a move of it fails).
type drState struct {
	N      int64
	Broken bool
}

func (s *drState) EncodeMsgpack(e *msgpack.Encoder) error {
	if s.Broken {
		return errors.New("broken on purpose")
	}
	return e.EncodeInt(s.N)
}

func (s *drState) DecodeMsgpack(d *msgpack.Decoder) error {
	var err error
	s.N, err = d.DecodeInt64()
	return err
}

var (
	drAddP   = wire.NewPacket[int64, int64]("dr-add")     // adds, then calls a peer Spot and a node asynchronously
	drOweP   = wire.NewPacket[string, struct{}]("dr-owe") // CallNodeAsync of the helper's handler named by the argument
	drBreakP = wire.NewPacket[struct{}, struct{}]("dr-break")
	drGetP   = wire.NewPacket[struct{}, int64]("dr-get")
)

// drJournal records what the drain kinds did, in order, and counts the
// asynchronous calls started and the replies taken.
type drJournal struct {
	mu      sync.Mutex
	events  []string
	started atomic.Int64
	taken   atomic.Int64
	seen    map[string]bool // node and ID of every activation
	again   int             // activations on a draining node of a Spot active there before
}

// activated records an activation and whether it took a Spot back on a
// draining node. (A Spot claimed just before the drain may run its first
// turn just after: a first activation on a draining node is not counted.)
func (j *drJournal) activated(c *spot.Context) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := c.Node.RID() + " " + c.ID
	if j.seen[key] && draining(c.Node) {
		j.again++
	}
	if j.seen == nil {
		j.seen = map[string]bool{}
	}
	j.seen[key] = true
	j.events = append(j.events, "activate "+c.ID+" on "+c.Node.RID())
}

func (j *drJournal) reactivations() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.again
}

func (j *drJournal) add(format string, args ...any) {
	j.mu.Lock()
	j.events = append(j.events, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

// index is the position of the first event equal to ev (-1: none).
func (j *drJournal) index(ev string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, e := range j.events {
		if e == ev {
			return i
		}
	}
	return -1
}

func draining(n *routemesh.Node) bool {
	_, d := n.PeerReady(n.RID())
	return d
}

// drKind is a drain counter kind; persistent ones save after every
// message. helper names the node whose handlers "echo", "gated" and
// "held" its asynchronous calls go to.
func drKind(name string, j *drJournal, persistent bool, helper *atomic.Pointer[string]) *spot.Kind[drState] {
	k := spot.NewKind(name, func(string) *drState { return &drState{} })
	var replies *spot.Replies // set below, before the kind is enabled
	start := func(err error) {
		if err == nil {
			j.started.Add(1)
		}
	}
	spot.On(k, drAddP, func(c *spot.Context, s *drState, n int64) (int64, error) {
		s.N += n
		if !strings.HasSuffix(c.ID, "-p") {
			body, _ := drGetP.EncodeRequest(struct{}{})
			start(replies.CallSpot(c, name, c.ID+"-p", drGetP.Name(), body, 5*time.Second, "peer"))
			start(replies.CallNode(c, *helper.Load(), "echo", nil, 5*time.Second, "echo"))
		}
		return s.N, nil
	})
	spot.On(k, drGetP, func(_ *spot.Context, s *drState, _ struct{}) (int64, error) { return s.N, nil })
	spot.On(k, drOweP, func(c *spot.Context, s *drState, handler string) (struct{}, error) {
		err := replies.CallNode(c, *helper.Load(), handler, nil, 30*time.Second, handler)
		start(err)
		return struct{}{}, err
	})
	spot.On(k, drBreakP, func(_ *spot.Context, s *drState, _ struct{}) (struct{}, error) {
		s.Broken = true
		return struct{}{}, nil
	})
	replies = k.OnReply(func(c *spot.Context, _ *drState, r *spot.Reply) {
		j.taken.Add(1)
		j.add("reply %s %v on %s", c.ID, r.Tag, c.Node.RID())
	})
	k.OnActivate(func(c *spot.Context, _ *drState) error { j.activated(c); return nil })
	k.OnDeactivate(func(c *spot.Context, _ *drState) { j.add("deactivate %s on %s", c.ID, c.Node.RID()) })
	if persistent {
		k.Persist(spot.Persistence{Version: 1, Every: 1})
	}
	return k
}

// gate is a channel a test closes once (at cleanup at the latest).
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// waitGate is a Node-direct handler that answers once g opens (or its
// deadline passes).
func waitGate(g *gate) routemesh.RequestHandler {
	return func(c *routemesh.Context, _ []byte) ([]byte, error) {
		select {
		case <-g.ch:
		case <-c.Done():
		}
		return nil, nil
	}
}

// drRig is two Object Servers hosting the drain kinds — the victim that
// drains (with the drain timeout given: the grace is half of it) and the
// helper, which also answers the asynchronous calls — and an Object
// Client.
type drRig struct {
	victim, helper, client *routemesh.Node
	j                      *drJournal
	gated, held            *gate
}

func newDrRig(t *testing.T, persistent bool, drainTimeout time.Duration) *drRig {
	t.Helper()
	store := location.NewMemory()
	r := &drRig{j: &drJournal{}, gated: newGate(t), held: newGate(t)}
	var helper atomic.Pointer[string]
	kinds := func() []spot.Registration { return []spot.Registration{drKind("dr", r.j, persistent, &helper)} }
	_, r.helper = startNode(t, store, "help", nodeOpts{role: routemesh.ObjectServer, kinds: kinds(), more: func(b *routemesh.MeshBuilder) {
		b.HandleDirectRequest("echo", func(*routemesh.Context, []byte) ([]byte, error) { return nil, nil }).
			HandleDirectRequest("gated", waitGate(r.gated)).HandleDirectRequest("held", waitGate(r.held))
	}})
	rid := r.helper.RID()
	helper.Store(&rid)
	_, r.victim = startNode(t, store, "victim", nodeOpts{role: routemesh.ObjectServer, kinds: kinds(), more: func(b *routemesh.MeshBuilder) {
		b.SetTimeouts(drainTimeout, 0)
	}})
	_, r.client = startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, r.victim, r.helper, r.client)
	return r
}

// onVictim returns n fresh Spot IDs (prefix-0, …) the first call put on
// the victim.
func (r *drRig) onVictim(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	var ids []string
	for i := 0; len(ids) < n; i++ {
		if i > 40*n {
			t.Fatalf("only %d of %d Spots landed on the victim", len(ids), i)
		}
		id := fmt.Sprintf("%s-%d", prefix, i)
		_, res, err := spot.CallRaw(ctx, r.client, "dr", id, drAddP.Name(), mustEnc(t, drAddP, 1))
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner == r.victim.RID() {
			ids = append(ids, id)
		}
	}
	return ids
}

func (r *drRig) stats(t *testing.T, n *routemesh.Node) (spot.Stats, spot.KindStats) {
	t.Helper()
	st, err := spot.StatsOf(n)
	if err != nil {
		t.Fatal(err)
	}
	return st, st.Kinds[0]
}

// checkAccounted waits until every asynchronous call started was taken
// as a reply turn or counted abandoned, once.
func (r *drRig) checkAccounted(t *testing.T) {
	t.Helper()
	var abandoned uint64
	ok := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		sv, _ := r.stats(t, r.victim)
		sh, _ := r.stats(t, r.helper)
		abandoned = sv.AsyncAbandoned + sh.AsyncAbandoned
		if r.j.taken.Load()+int64(abandoned) == r.j.started.Load() {
			ok = true
			break
		}
	}
	if !ok {
		t.Fatalf("%d asynchronous calls started, %d replies taken, %d abandoned", r.j.started.Load(), r.j.taken.Load(), abandoned)
	}
}

// A Spot deactivated by a drain takes the replies it is owed as turns
// before its last turn (the drain waits for them, within its grace: half
// the drain timeout); a call that waited meanwhile goes to the new owner.
// (The replies still owed when the grace ends are dropped and counted:
// TestDrain_UnderLoadTakesNothingBack.)
func TestDrain_SpotTakesOwedReplies(t *testing.T) {
	r := newDrRig(t, false, 30*time.Second)
	ctx := ctxT(t, 30*time.Second)
	ids := r.onVictim(t, "w", 2)
	owing, quiet := ids[0], ids[1]
	if _, err := spot.Call(ctx, r.client, "dr", owing, drOweP, "gated"); err != nil {
		t.Fatal(err)
	}
	_, k0 := r.stats(t, r.victim)
	drained := make(chan error, 1)
	go func() { drained <- r.victim.Drain(context.Background()) }()
	// The quiet Spot's last turn has run: the owing one was asked for its
	// last turn at the same time.
	waitFor(t, "the quiet Spot deactivated", 10*time.Second, func() bool {
		_, k := r.stats(t, r.victim)
		return r.j.index("deactivate "+quiet+" on "+r.victim.RID()) >= 0 && k.Deactivations > k0.Deactivations
	})
	if on := activeOn(t, r.victim, owing); !on {
		t.Fatalf("%s deactivated before the replies it is owed", owing)
	}
	waited := make(chan error, 1)
	var res spot.Result
	go func() {
		var err error
		_, res, err = spot.CallRaw(ctx, r.client, "dr", owing, drGetP.Name(), mustEnc(t, drGetP, struct{}{}))
		waited <- err
	}()
	r.gated.open()
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
	reply := r.j.index(fmt.Sprintf("reply %s gated on %s", owing, r.victim.RID()))
	last := r.j.index(fmt.Sprintf("deactivate %s on %s", owing, r.victim.RID()))
	if reply < 0 || last < 0 || reply > last {
		t.Fatalf("the owed reply was not taken before the last turn (reply at %d, last turn at %d)", reply, last)
	}
	sv, kv := r.stats(t, r.victim)
	if kv.Active != 0 || sv.AsyncAbandoned != 0 {
		t.Fatalf("after the drain: %d active, %d replies abandoned", kv.Active, sv.AsyncAbandoned)
	}
	if err := <-waited; err != nil || res.Owner != r.helper.RID() {
		t.Fatalf("the call that waited: %v, answered by %q", err, res.Owner)
	}
	if n := r.j.reactivations(); n != 0 {
		t.Fatalf("%d Spots taken back by the draining node", n)
	}
	r.checkAccounted(t)
}

func activeOn(t *testing.T, n *routemesh.Node, id string) bool {
	t.Helper()
	ids, err := spot.Active(n, "dr", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// A drain under load ends before its timeout with no Spot active on the
// node, takes no Spot back meanwhile (the calls that waited go to the new
// owner) and no call fails — for a kind without persistence (deactivated,
// placed elsewhere on the next call) and for a persistent one (moved; a
// Spot whose move fails is deactivated, not taken back). A reply that
// does not come within the grace (or to a Spot that moved) is dropped and
// counted.
func TestDrain_UnderLoadTakesNothingBack(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", persistent), func(t *testing.T) {
			r := newDrRig(t, persistent, 6*time.Second)
			ids := r.onVictim(t, "l", 6)
			ctx := ctxT(t, 30*time.Second)
			if persistent {
				if _, err := spot.Call(ctx, r.client, "dr", ids[0], drBreakP, struct{}{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := spot.Call(ctx, r.client, "dr", ids[1], drOweP, "held"); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var calls, failed atomic.Int64
			var mu sync.Mutex
			var errs []error
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						_, err := spot.Call(cctx, r.client, "dr", id, drAddP, 1)
						cancel()
						calls.Add(1)
						if err != nil {
							failed.Add(1)
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					}
				}()
			}
			waitFor(t, "load", 10*time.Second, func() bool { return calls.Load() >= 30 })
			err := r.victim.Drain(context.Background())
			base := calls.Load()
			waitFor(t, "load after the drain", 10*time.Second, func() bool { return calls.Load() >= base+30 })
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatalf("drain: %v", err)
			}
			if sv, kv := r.stats(t, r.victim); kv.Active != 0 || sv.AsyncAbandoned < 1 {
				t.Fatalf("after the drain: %d Spots active, %d replies abandoned (one never came)", kv.Active, sv.AsyncAbandoned)
			}
			if n := r.j.reactivations(); n != 0 {
				t.Fatalf("%d Spots taken back by the draining node", n)
			}
			if failed.Load() > 0 {
				t.Fatalf("%d of %d calls failed, the first with %v", failed.Load(), calls.Load(), errs[0])
			}
			if persistent && r.j.index("deactivate "+ids[0]+" on "+r.victim.RID()) < 0 {
				t.Fatalf("%s, which could not move, was not deactivated on the draining node", ids[0])
			}
			for _, id := range ids {
				_, res, err := spot.CallRaw(ctx, r.client, "dr", id, drGetP.Name(), mustEnc(t, drGetP, struct{}{}))
				if err != nil || res.Owner != r.helper.RID() {
					t.Fatalf("%s after the drain: %v, answered by %q", id, err, res.Owner)
				}
			}
			r.held.open()
			r.checkAccounted(t)
		})
	}
}
