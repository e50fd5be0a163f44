package test

// Drains under load, with asynchronous calls in flight, on a real
// redis-server: for a kind without persistence (its Spots are deactivated
// and placed elsewhere on their next call) and a persistent one (moved).
// Every repetition starts a new Object Server, puts Spots on it under
// sequential callers, makes two of them owe replies that never come in
// time, drains it and stops it. ZLINK_DRAIN_REPS sets the repetitions
// (default 5; make test-long runs 50).

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

const (
	dlPlain = "dl-plain" // no persistence
	dlKept  = "dl-kept"  // persistent, saved after every message
	// dlDrainTimeout is the victims' drain timeout: a grace of 3 s for
	// the replies their Spots are owed.
	dlDrainTimeout = 6 * time.Second
)

// dlHold asks a Spot to start an asynchronous call to the helper's
// "dl-held" handler, which answers only when the test lets it (the
// payload names the gate): the Spot owes a reply it will not get in time.
var dlHold = wire.NewPacket[string, struct{}]("dl-hold")

// dlState is a drain counter's state.
type dlState struct{ N int64 }

// dlAsync counts the asynchronous calls the drain kinds started and the
// replies they took as turns.
type dlAsync struct {
	started, taken atomic.Int64
	helper         atomic.Pointer[string] // the RID the calls go to
}

// dlKind is a counter whose adds each start two asynchronous calls (the
// Spot "<id>-p" and the helper's "dl-echo" handler), as game rooms do.
func dlKind(name string, persistent bool, as *dlAsync) *spot.Kind[dlState] {
	k := spot.NewKind(name, func(string) *dlState { return &dlState{} })
	var replies *spot.Replies // set below, before the kind is enabled
	count := func(err error) error {
		if err == nil {
			as.started.Add(1)
		}
		return err
	}
	spot.On(k, mvAdd, func(c *spot.Context, s *dlState, n int64) (int64, error) {
		s.N += n
		if !strings.HasSuffix(c.ID, "-p") {
			body, _ := mvGet.EncodeRequest(struct{}{})
			_ = count(replies.CallSpot(c, name, c.ID+"-p", mvGet.Name(), body, 5*time.Second, "peer"))
			_ = count(replies.CallNode(c, *as.helper.Load(), "dl-echo", nil, 5*time.Second, "echo"))
		}
		return s.N, nil
	})
	spot.On(k, mvGet, func(_ *spot.Context, s *dlState, _ struct{}) (int64, error) { return s.N, nil })
	spot.On(k, dlHold, func(c *spot.Context, _ *dlState, gate string) (struct{}, error) {
		return struct{}{}, count(replies.CallNode(c, *as.helper.Load(), "dl-held", []byte(gate), 30*time.Second, "held"))
	})
	replies = k.OnReply(func(*spot.Context, *dlState, *spot.Reply) { as.taken.Add(1) })
	if persistent {
		k.Persist(spot.Persistence{Version: 1, Every: 1})
	}
	return k
}

// dlGates are the gates of the "dl-held" handler, by name; each opens
// once.
type dlGates struct{ m sync.Map }

func (g *dlGates) gate(name string) chan struct{} {
	ch, _ := g.m.LoadOrStore(name, make(chan struct{}))
	return ch.(chan struct{})
}

func (g *dlGates) open(name string) {
	ch := g.gate(name)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// dlNode starts an automatic MeshNode of autoMesh on the Redis at addr
// with the Spot runtime (spotsFast) and more builder settings; stop stops
// it (once; at cleanup at the latest).
func dlNode(t *testing.T, addr, prefix string, role routemesh.ObjectRole, more func(*routemesh.MeshBuilder), kinds ...spot.Registration) (n *routemesh.Node, stop func()) {
	t.Helper()
	store := openRedis(t, addr)
	o := zlink.NewOptions().SetLocationStore(store).SetLogger(testLogger(t))
	b := o.AddRouteMesh(autoMesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(spotsLiveness).
		ConfigureDiscovery(fastDiscovery).SetObjectRole(role)
	if more != nil {
		more(b)
	}
	spot.EnableWith(b, spotsFast, kinds...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start %s: %v", prefix, err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { stopHost(t, h) }) }
	t.Cleanup(stop)
	return h.Mesh(autoMesh), stop
}

// drainReps is how many drains each kind goes through.
func drainReps(t *testing.T) int {
	t.Helper()
	s := os.Getenv("ZLINK_DRAIN_REPS")
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("ZLINK_DRAIN_REPS=%q: want a positive count", s)
	}
	return n
}

// A drain under load, with asynchronous calls in flight, ends before its
// timeout; afterwards no Spot is active on the drained node and none of
// its records names it; the Spots answer from elsewhere; every call ended
// once, by its deadline, with its reply or a typed error; every
// asynchronous call's reply was taken as a turn or counted abandoned.
func TestSpotsDrain_UnderLoadWithAsyncCalls(t *testing.T) {
	for _, kind := range []string{dlPlain, dlKept} {
		t.Run(kind, func(t *testing.T) { dlRun(t, kind, drainReps(t)) })
	}
}

func dlRun(t *testing.T, kind string, reps int) {
	addr, dir := spotsRedis(t)
	as := &dlAsync{}
	gates := &dlGates{}
	t.Cleanup(func() {
		gates.m.Range(func(k, _ any) bool { gates.open(k.(string)); return true })
	})
	kinds := func() []spot.Registration {
		return []spot.Registration{dlKind(dlPlain, false, as), dlKind(dlKept, true, as)}
	}
	helper, _ := dlNode(t, addr, "dlh", routemesh.ObjectServer, func(b *routemesh.MeshBuilder) {
		b.HandleDirectRequest("dl-echo", func(*routemesh.Context, []byte) ([]byte, error) { return nil, nil }).
			HandleDirectRequest("dl-held", func(c *routemesh.Context, p []byte) ([]byte, error) {
				select {
				case <-gates.gate(string(p)):
				case <-c.Done():
				}
				return nil, nil
			})
	}, kinds()...)
	rid := helper.RID()
	as.helper.Store(&rid)
	other, _ := dlNode(t, addr, "dls", routemesh.ObjectServer, nil, kinds()...)
	client, _ := dlNode(t, addr, "dlc", routemesh.ObjectClient, nil)
	spotsReady(t, helper, other, client)

	l := &mvLedger{}
	var abandoned uint64 // by the victims, which stop
	var ids []string
	for rep := range reps {
		prefix := fmt.Sprintf("r%d", rep)
		victim, stop := dlNode(t, addr, "dlv", routemesh.ObjectServer, func(b *routemesh.MeshBuilder) {
			b.SetTimeouts(dlDrainTimeout, 0)
		}, kinds()...)
		if err := victim.WaitPeers(ctxT(t, 15*time.Second), 3); err != nil {
			t.Fatalf("%s: peers: %v", victim.RID(), err)
		}
		if err := spot.WaitReady(ctxT(t, 15*time.Second), victim); err != nil {
			t.Fatal(err)
		}
		spotsServersKnown(t, client, victim.RID())
		mine, _ := mvOwnedBy(t, l, client, kind, prefix, victim.RID(), 4)
		var loops []*mvLoop
		for _, c := range mine {
			ids = append(ids, c.id)
			loops = append(loops, l.loop(t, client, c.id, kind, c.id, 5*time.Second))
		}
		for _, c := range mine {
			l.waitOK(t, c.id, 2, 15*time.Second)
		}
		for _, c := range mine[:2] {
			b, _ := dlHold.EncodeRequest(prefix)
			if _, _, err := spot.CallRaw(ctxT(t, 5*time.Second), client, kind, c.id, dlHold.Name(), b); err != nil {
				t.Fatalf("%s: hold: %v", c.id, err)
			}
		}

		if err := victim.Drain(context.Background()); err != nil {
			t.Fatalf("rep %d: drain of %s: %v", rep, victim.RID(), err)
		}
		after := time.Now()
		for _, k := range []string{dlPlain, dlKept} {
			if act, err := spot.Active(victim, k, 100); err != nil || len(act) != 0 {
				t.Fatalf("rep %d: after the drain, %s active on %s: %v %v", rep, k, victim.RID(), act, err)
			}
		}
		st := spotsStats(t, victim)
		for _, k := range st.Kinds {
			if k.Active != 0 || k.Activations != k.Deactivations {
				t.Fatalf("rep %d: after the drain, %d Spots of %s counted active (%d activations, %d deactivations)", rep, k.Active, k.Kind, k.Activations, k.Deactivations)
			}
		}
		if st.Overlaps != 0 {
			t.Fatalf("rep %d: %d overlaps on the drained node (a write found the record changed under it)", rep, st.Overlaps)
		}
		if st.AsyncAbandoned < 2 {
			t.Fatalf("rep %d: %d replies counted abandoned; 2 never came in time", rep, st.AsyncAbandoned)
		}
		// Every record went back or moved on — but one of a lease
		// generation the node lost meanwhile (a loaded machine can stall a
		// renewal past the short lease) stays until that lease expires:
		// the fenced Spots were not the node's any more.
		for _, c := range mine {
			for _, id := range []string{c.id, c.id + "-p"} {
				if rec := mvRecord(t, dir, kind, id); rec.OwnerRID == victim.RID() && (st.Fenced == 0 || rec.OwnerGeneration == st.LeaseGeneration) {
					t.Fatalf("rep %d: after the drain, the record of %s names the drained node %s (generation %d; lease %d valid %v; %d fenced)",
						rep, id, rec.OwnerRID, rec.OwnerGeneration, st.LeaseGeneration, st.LeaseValid, st.Fenced)
				}
			}
		}
		for _, c := range mine {
			waitFor(t, c.id+" answering from elsewhere", 15*time.Second, func() bool {
				_, ok := l.firstOK(c.id, c.id, after, victim.RID())
				return ok
			})
			next, _ := l.firstOK(c.id, c.id, after, victim.RID())
			if next.epoch <= c.epoch {
				t.Fatalf("rep %d: %s answered by %s at epoch %d after the drain, not above %d (on %s)", rep, c.id, next.owner, next.epoch, c.epoch, victim.RID())
			}
		}
		for _, lp := range loops {
			if !lp.stop() {
				t.Fatal("a caller's call did not end")
			}
		}
		gates.open(prefix)
		abandoned += spotsStats(t, victim).AsyncAbandoned
		stop()
	}

	for _, n := range []*routemesh.Node{helper, other} {
		if o := spotsStats(t, n).Overlaps; o != 0 {
			t.Errorf("%s: %d overlaps", n.RID(), o)
		}
	}
	errs := l.check(t)
	t.Logf("%d drains of %s: %d calls, errors %v", reps, kind, len(l.snapshot()), errs)
	for _, id := range ids {
		if kind == dlKept {
			l.checkSeq(t, id, id, 1) // nothing acknowledged lost, nothing counted twice
			continue
		}
		var adds []spotsCallRec
		for _, c := range l.snapshot() {
			if c.id == id && c.err == nil && c.op == "add" {
				adds = append(adds, c.spotsCallRec)
			}
		}
		checkSpotReplies(t, id, adds) // one activation per epoch
	}
	waitFor(t, "every asynchronous reply taken or counted abandoned", 15*time.Second, func() bool {
		total := abandoned + spotsStats(t, helper).AsyncAbandoned + spotsStats(t, other).AsyncAbandoned
		return as.taken.Load()+int64(total) == as.started.Load()
	})
}
