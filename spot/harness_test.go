package spot_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

const mesh = "game"

// fastSpots: a short lease so expiry shows in about a second.
var fastSpots = spot.Config{LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, Margin: 200 * time.Millisecond}

var (
	fastLiveness  = routemesh.LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 10, LastHeard: time.Second} // rides out a loaded machine's stalls
	fastDiscovery = routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second}
)

func logger(t *testing.T) zerolog.Logger {
	if os.Getenv("ZLINK_TEST_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// The counter kind of these tests, with a ledger of activations.
type counter struct {
	N, Last, Disorder, Seen int64
	Replies                 []string // "tag=value" or "tag!error" of async replies
}

type asyncOut struct {
	Kind, Target, Packet string
	TimeoutMs            int64
}

type add struct{ N int64 }

type callOut struct {
	Target string
	Kind   string
	Then   string // when set, Target is asked to call Then
}

var (
	addP     = wire.NewPacket[add, int64]("add")
	getP     = wire.NewPacket[struct{}, int64]("get")
	boomP    = wire.NewPacket[struct{}, int64]("boom")
	callP    = wire.NewPacket[callOut, int64]("call")
	pingP    = wire.NewPacket[add, struct{}]("ping")
	sleepP   = wire.NewPacket[int64, int64]("sleep")
	seqP     = wire.NewPacket[int64, struct{}]("seq")
	orderP   = wire.NewPacket[struct{}, [2]int64]("order") // seen, out of order
	asyncP   = wire.NewPacket[asyncOut, struct{}]("async")
	repliesP = wire.NewPacket[struct{}, []string]("replies")
)

// ledger counts activations per (ID, epoch) and where they ran.
type ledger struct {
	mu          sync.Mutex
	activations map[string]int // id → activations
	byEpoch     map[string]map[uint64]string
	deact       map[string]int
}

func newLedger() *ledger {
	return &ledger{activations: map[string]int{}, byEpoch: map[string]map[uint64]string{}, deact: map[string]int{}}
}

func (l *ledger) activated(c *spot.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.activations[c.ID]++
	if l.byEpoch[c.ID] == nil {
		l.byEpoch[c.ID] = map[uint64]string{}
	}
	l.byEpoch[c.ID][c.Epoch] = c.Node.RID()
}

func (l *ledger) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.activations[id]
}

func (l *ledger) deactivations(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deact[id]
}

func counterKind(l *ledger, idle time.Duration) *spot.Kind[counter] {
	k := spot.NewKind("counter", func(string) *counter { return &counter{} })
	var replies *spot.Replies // set below, before the kind is enabled
	spot.On(k, addP, func(_ *spot.Context, s *counter, r add) (int64, error) { s.N += r.N; return s.N, nil })
	spot.On(k, getP, func(_ *spot.Context, s *counter, _ struct{}) (int64, error) { return s.N, nil })
	spot.On(k, boomP, func(_ *spot.Context, s *counter, _ struct{}) (int64, error) { panic("boom") })
	spot.On(k, callP, func(c *spot.Context, s *counter, r callOut) (int64, error) {
		if r.Then != "" {
			return spot.Call(c, c.Node, r.Kind, r.Target, callP, callOut{Kind: r.Kind, Target: r.Then})
		}
		return spot.Call(c, c.Node, r.Kind, r.Target, getP, struct{}{})
	})
	spot.On(k, sleepP, func(c *spot.Context, s *counter, ms int64) (int64, error) {
		if ms < 0 {
			time.Sleep(time.Duration(-ms) * time.Millisecond)
			return s.N, nil
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-c.Done():
		}
		return s.N, nil
	})
	spot.OnSend(k, pingP, func(_ *spot.Context, s *counter, r add) { s.N += r.N })
	spot.OnSend(k, seqP, func(_ *spot.Context, s *counter, n int64) {
		if n != s.Last+1 {
			s.Disorder++
		}
		s.Last = n
		s.Seen++
	})
	spot.On(k, asyncP, func(c *spot.Context, s *counter, r asyncOut) (struct{}, error) {
		var body []byte
		if r.Packet == sleepP.Name() {
			body, _ = sleepP.EncodeRequest(-500) // negative: sleep that long, ignoring the deadline
		} else {
			body, _ = getP.EncodeRequest(struct{}{})
		}
		return struct{}{}, replies.CallSpot(c, r.Kind, r.Target, r.Packet, body, time.Duration(r.TimeoutMs)*time.Millisecond, r.Target)
	})
	spot.On(k, repliesP, func(_ *spot.Context, s *counter, _ struct{}) ([]string, error) { return s.Replies, nil })
	replies = k.OnReply(func(c *spot.Context, s *counter, r *spot.Reply) {
		if r.Err != nil {
			s.Replies = append(s.Replies, fmt.Sprintf("%v!%v", r.Tag, r.Err))
			return
		}
		v, _ := getP.DecodeReply(r.Payload)
		s.Replies = append(s.Replies, fmt.Sprintf("%v=%d", r.Tag, v))
	})
	spot.On(k, orderP, func(_ *spot.Context, s *counter, _ struct{}) ([2]int64, error) {
		return [2]int64{s.Seen, s.Disorder}, nil
	})
	if l != nil {
		k.OnActivate(func(c *spot.Context, _ *counter) error { l.activated(c); return nil })
		k.OnDeactivate(func(c *spot.Context, _ *counter) {
			l.mu.Lock()
			l.deact[c.ID]++
			l.mu.Unlock()
		})
	}
	if idle > 0 {
		k.SetIdleTimeout(idle)
	}
	return k
}

type nodeOpts struct {
	role   routemesh.ObjectRole
	kinds  []spot.Registration
	weight uint32
	cfg    *spot.Config
	more   func(*routemesh.MeshBuilder) // more roles, when set
}

// startNode starts an automatic MeshNode of mesh on store with the Spot
// runtime; it stops at cleanup.
func startNode(t *testing.T, store location.Store, prefix string, o nodeOpts) (*zlink.Host, *routemesh.Node) {
	t.Helper()
	opts := zlink.NewOptions().SetLocationStore(store).SetLogger(logger(t))
	b := opts.AddRouteMesh(mesh).SetRoutingIDPrefix(prefix).ConfigureLiveness(fastLiveness).ConfigureDiscovery(fastDiscovery).
		SetObjectRole(o.role)
	if o.weight > 0 {
		b.SetPlacementWeight(o.weight)
	}
	if o.more != nil {
		o.more(b)
	}
	cfg := fastSpots
	if o.cfg != nil {
		cfg = *o.cfg
	}
	spot.EnableWith(b, cfg, o.kinds...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start %s: %v", prefix, err)
	}
	t.Cleanup(func() { stop(t, h) })
	return h, h.Mesh(mesh)
}

func stop(t *testing.T, h *zlink.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor waits for cond, checking every 10 ms, until d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSpots waits until every node can serve Spot calls and sees every
// Object Server as a ready peer.
func waitSpots(t *testing.T, nodes ...*routemesh.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := n.WaitPeers(ctxT(t, 10*time.Second), len(nodes)-1); err != nil {
			t.Fatalf("%s: peers: %v", n.RID(), err)
		}
	}
	for _, n := range nodes {
		if n.ObjectRole() == routemesh.ObjectNone {
			continue
		}
		if err := spot.WaitReady(ctxT(t, 10*time.Second), n); err != nil {
			t.Fatal(err)
		}
	}
}

type contextT = context.Context

// startErr starts a node expecting Start to fail, and returns the error.
func startErr(t *testing.T, store location.Store, prefix string, o nodeOpts) error {
	t.Helper()
	opts := zlink.NewOptions().SetLocationStore(store).SetLogger(logger(t))
	b := opts.AddRouteMesh(mesh).SetRoutingIDPrefix(prefix).SetObjectRole(o.role)
	spot.EnableWith(b, fastSpots, o.kinds...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, opts)
	if err == nil {
		stop(t, h)
	}
	return err
}

// startErrWith is startErr with the node's own Spot settings.
func startErrWith(t *testing.T, store location.Store, prefix string, o nodeOpts) error {
	t.Helper()
	opts := zlink.NewOptions().SetLocationStore(store).SetLogger(logger(t))
	b := opts.AddRouteMesh(mesh).SetRoutingIDPrefix(prefix).SetObjectRole(o.role)
	spot.EnableWith(b, *o.cfg, o.kinds...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, opts)
	if err == nil {
		stop(t, h)
	}
	return err
}
