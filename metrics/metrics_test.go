package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/metrics"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/spot/counter"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
		goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
		goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
	)
}

func start(t *testing.T, o *zlink.Options) *zlink.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(ctx)
	})
	return h
}

// An embedding application registers the collector on its own registry:
// the metrics are lint-clean, count what happened, carry a correct
// latency sum, and no label carries a RID or an actor path.
func TestCollector_ForAnEmbedder(t *testing.T) {
	os := zlink.NewOptions()
	os.AddRouteMesh("game").SetRoutingID("srv-7f3a").Channel("match").Server().
		HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	srv := start(t, os).Mesh("game")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("game").SetRoutingID("cli-91bc").AddPeer(srv.Endpoint(), "srv-7f3a").Channel("match").Client()
	hc := start(t, oc)
	cli := hc.Mesh("game")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.WaitReady(ctx, "match"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := cli.Call(ctx, "match", "echo", nil); err != nil {
			t.Fatal(err)
		}
	}

	c := metrics.For(hc)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if got := testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		only(c, ch, `zlink_calls_ok_total`)
	})); got != 5 {
		t.Fatalf("zlink_calls_ok_total = %v, want 5", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v := l.GetValue(); strings.Contains(v, "srv-7f3a") || strings.Contains(v, "cli-91bc") || strings.HasPrefix(v, "/") {
					t.Errorf("%s carries a per-process label %s=%q", f.GetName(), l.GetName(), v)
				}
			}
			if h := m.GetHistogram(); h != nil && f.GetName() == "zlink_call_latency_seconds" {
				if h.GetSampleCount() != 5 || h.GetSampleSum() <= 0 {
					t.Errorf("latency histogram: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
				}
			}
		}
	}
}

// only forwards the metrics of one family.
func only(c prometheus.Collector, ch chan<- prometheus.Metric, name string) {
	all := make(chan prometheus.Metric, 256)
	go func() { c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+name+`"`) {
			ch <- m
		}
	}
}

// Spots show per kind and as runtime events, lint-clean.
func TestCollector_Spots(t *testing.T) {
	store := location.NewMemory()
	o := zlink.NewOptions().SetLocationStore(store)
	spot.Enable(o.AddRouteMesh("game").SetRoutingIDPrefix("os").SetObjectRole(routemesh.ObjectServer), counter.Kind())
	h := start(t, o)
	n := h.Mesh("game")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := spot.WaitReady(ctx, n); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := spot.CallRaw(ctx, n, counter.KindName, id, "add", []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := spot.CallRaw(ctx, n, counter.KindName, "a", "add", []byte("x")); !errors.Is(err, zlink.ErrHandler) {
		t.Fatalf("a bad add: %v", err)
	}
	if _, _, err := spot.CallRaw(ctx, n, counter.KindName, "a", "stranger", nil); !errors.Is(err, zlink.ErrUnknownPacket) {
		t.Fatalf("an unknown packet: %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.For(h))
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	want := `
# HELP zlink_spots_active Spots active on this MeshNode, by Spot kind.
# TYPE zlink_spots_active gauge
zlink_spots_active{mesh="game",spot_kind="counter"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "zlink_spots_active"); err != nil {
		t.Fatal(err)
	}
	turns := `
# HELP zlink_spot_turns_total Spot turns on this MeshNode, by Spot kind, packet (registered names; _reply for OnReply turns, anything else _unknown), source (request, send, reply, timer) and result (ok or the error kind).
# TYPE zlink_spot_turns_total counter
zlink_spot_turns_total{mesh="game",packet="_unknown",result="unknown_packet",source="request",spot_kind="counter"} 1
zlink_spot_turns_total{mesh="game",packet="add",result="handler",source="request",spot_kind="counter"} 1
zlink_spot_turns_total{mesh="game",packet="add",result="ok",source="request",spot_kind="counter"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(turns), "zlink_spot_turns_total"); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]bool{}
	for _, f := range fams {
		if f.GetName() != "zlink_spot_events_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "event" {
					events[l.GetValue()] = true
				}
			}
		}
	}
	for _, ev := range []string{"sends_dropped", "async_abandoned"} {
		if !events[ev] {
			t.Errorf("zlink_spot_events_total has no event %q (has %v)", ev, events)
		}
	}
}
