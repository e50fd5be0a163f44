package spot_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

// A ledger Spot: per caller, the last sequence number seen and how many
// came out of order; persisted so it moves with the Spot.
type ledgerState struct {
	Last     map[string]int64
	Total    int64
	Disorder int64
	Where    []string // caller:got:want of each message out of order
}

type step struct {
	Caller string
	Seq    int64
}

var (
	stepP     = wire.NewPacket[step, int64]("step")
	stepSendP = wire.NewPacket[step, struct{}]("step-send")
	statsP    = wire.NewPacket[struct{}, ledgerState]("stats")
)

func ledgerKind() *spot.Kind[ledgerState] {
	k := spot.NewKind("ledger", func(string) *ledgerState { return &ledgerState{Last: map[string]int64{}} })
	apply := func(s *ledgerState, st step) {
		if s.Last == nil {
			s.Last = map[string]int64{}
		}
		if st.Seq != s.Last[st.Caller]+1 {
			s.Disorder++
			s.Where = append(s.Where, fmt.Sprintf("%s:%d:%d", st.Caller, st.Seq, s.Last[st.Caller]+1))
		}
		s.Last[st.Caller] = st.Seq
		s.Total++
	}
	spot.On(k, stepP, func(_ *spot.Context, s *ledgerState, st step) (int64, error) { apply(s, st); return s.Total, nil })
	spot.OnSend(k, stepSendP, func(_ *spot.Context, s *ledgerState, st step) { apply(s, st) })
	spot.On(k, statsP, func(_ *spot.Context, s *ledgerState, _ struct{}) (ledgerState, error) { return *s, nil })
	return k.Persist(spot.Persistence{Version: 1, Interval: 50 * time.Millisecond})
}

// Moves under load: no caller sees an error, every caller's order holds,
// nothing is lost, the Spot ends up where it was sent.
func TestMove_UnderLoadNoErrorsOrderKept(t *testing.T) {
	const moves = 20
	store := location.NewMemory()
	var servers []*routemesh.Node
	for i := range 2 {
		_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{ledgerKind()}})
		servers = append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	ctx := ctxT(t, 60*time.Second)
	_, res, err := spot.CallRaw(ctx, cl, "ledger", "L", stepP.Name(), mustEnc(t, stepP, step{Caller: "warm", Seq: 1}))
	if err != nil {
		t.Fatal(err)
	}
	owner := res.Owner

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, sends atomic.Int64
	var errs sync.Map
	for w := range 4 {
		wg.Add(1)
		go func() { // requests, one at a time per caller
			defer wg.Done()
			caller := fmt.Sprintf("req-%d", w)
			for seq := int64(1); ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := spot.Call(cctx, cl, "ledger", "L", stepP, step{Caller: caller, Seq: seq})
				cancel()
				if err != nil {
					errs.Store(fmt.Sprintf("%s#%d", caller, seq), err)
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() { // pipelined one-way messages from one caller
		defer wg.Done()
		for seq := int64(1); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := spot.Send(ctx, cl, "ledger", "L", stepSendP, step{Caller: "sender", Seq: seq}); err != nil {
				errs.Store(fmt.Sprintf("send#%d", seq), err)
				return
			}
			sends.Add(1)
			if seq%2 == 0 {
				// Pace the sender (sends have no flow control): a few
				// thousand a second, well under what the Spot takes.
				time.Sleep(time.Millisecond)
			}
		}
	}()

	rid := func(n *routemesh.Node) string { return n.RID() }
	nodeOf := map[string]*routemesh.Node{rid(servers[0]): servers[0], rid(servers[1]): servers[1]}
	other := func(r string) string {
		if r == rid(servers[0]) {
			return rid(servers[1])
		}
		return rid(servers[0])
	}
	firstErr := func() (e error) {
		errs.Range(func(k, v any) bool { e = fmt.Errorf("%v: %w", k, v.(error)); return false })
		return e
	}
	for i := range moves {
		before := calls.Load()
		waitFor(t, "calls between moves", 10*time.Second, func() bool {
			if e := firstErr(); e != nil {
				t.Fatalf("a caller failed: %v", e)
			}
			return calls.Load() > before+30
		})
		to := other(owner)
		if err := spot.Move(ctx, nodeOf[owner], "ledger", "L", to); err != nil {
			t.Fatalf("move %d %s → %s: %v", i, owner, to, err)
		}
		owner = to
	}
	close(stop)
	wg.Wait()
	errs.Range(func(k, v any) bool {
		t.Errorf("%v: %v", k, v)
		return true
	})
	var got ledgerState
	var res2 spot.Result
	want := calls.Load() + sends.Load() + 1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, r, err := spot.CallRaw(ctx, cl, "ledger", "L", statsP.Name(), mustEnc(t, statsP, struct{}{}))
		if err == nil {
			got, _ = statsP.DecodeReply(out)
			res2 = r
			if got.Total == want {
				break
			}
		}
		if time.Now().After(deadline) {
			st0, _ := spot.StatsOf(servers[0])
			st1, _ := spot.StatsOf(servers[1])
			t.Fatalf("%d messages counted of %d sent (%d calls, %d sends; last sender seq %d); dropped %d+%d, disorder %d",
				got.Total, want, calls.Load(), sends.Load(), got.Last["sender"], st0.SendsDropped, st1.SendsDropped, got.Disorder)
		}
	}
	if got.Disorder != 0 {
		t.Fatalf("%d of %d messages out of order across %d moves: %v", got.Disorder, got.Total, moves, got.Where)
	}
	if res2.Owner != owner {
		t.Fatalf("the Spot answers from %s, moved to %s", res2.Owner, owner)
	}
	st0, _ := spot.StatsOf(servers[0])
	st1, _ := spot.StatsOf(servers[1])
	if st0.Moves+st1.Moves != moves {
		t.Fatalf("moves counted %d + %d, want %d", st0.Moves, st1.Moves, moves)
	}
	if d := st0.SendsDropped + st1.SendsDropped; d != 0 {
		t.Fatalf("%d one-way messages dropped", d)
	}
	t.Logf("%d calls and %d sends across %d moves, no error, in order", calls.Load(), sends.Load(), moves)
}

// A move to a node that does not take it fails cleanly and the Spot goes
// on where it was.
func TestMove_RefusedLeavesTheSpot(t *testing.T) {
	store := location.NewMemory()
	_, s0 := startNode(t, store, "os0", nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{ledgerKind()}})
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, s0, cl)
	ctx := ctxT(t, 20*time.Second)
	if _, err := spot.Call(ctx, cl, "ledger", "R", stepP, step{Caller: "c", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	err := spot.Move(ctx, s0, "ledger", "R", cl.RID()) // an Object Client never hosts
	if err == nil {
		t.Fatal("a move to an Object Client succeeded")
	}
	if v, err := spot.Call(ctx, cl, "ledger", "R", stepP, step{Caller: "c", Seq: 2}); err != nil || v != 2 {
		t.Fatalf("after a refused move: %d, %v", v, err)
	}
	if err := spot.Move(ctx, s0, "ledger", "absent", cl.RID()); !errors.Is(err, spot.ErrNoTarget) {
		t.Fatalf("moving a Spot that is not active here: %v", err)
	}
}

// Drain hands every Spot of a persistent kind to another server: no
// caller error, the state comes along.
func TestMove_DrainHandsOff(t *testing.T) {
	store := location.NewMemory()
	var servers []*routemesh.Node
	for i := range 2 {
		_, s := startNode(t, store, fmt.Sprintf("os%d", i), nodeOpts{role: routemesh.ObjectServer, kinds: []spot.Registration{ledgerKind()}})
		servers = append(servers, s)
	}
	_, cl := startNode(t, store, "oc", nodeOpts{role: routemesh.ObjectClient})
	waitSpots(t, append(servers, cl)...)
	ctx := ctxT(t, 30*time.Second)
	onVictim := 0
	for i := range 40 {
		_, res, err := spot.CallRaw(ctx, cl, "ledger", fmt.Sprintf("d-%d", i), stepP.Name(), mustEnc(t, stepP, step{Caller: "c", Seq: 1}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Owner == servers[0].RID() {
			onVictim++
		}
	}
	if err := servers[0].Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	st, _ := spot.StatsOf(servers[0])
	if st.Moves != uint64(onVictim) || st.Kinds[0].Active != 0 {
		t.Fatalf("drain moved %d of %d Spots; %d still active", st.Moves, onVictim, st.Kinds[0].Active)
	}
	for i := range 40 {
		v, res, err := spot.CallRaw(ctx, cl, "ledger", fmt.Sprintf("d-%d", i), stepP.Name(), mustEnc(t, stepP, step{Caller: "c", Seq: 2}))
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := stepP.DecodeReply(v); n != 2 || res.Owner != servers[1].RID() {
			t.Fatalf("d-%d after drain: total %d on %s", i, n, res.Owner)
		}
	}
}
