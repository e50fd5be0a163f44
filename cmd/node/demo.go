package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/spot/counter"
	"github.com/zlink-go/zlink/wire"
)

const (
	demoMesh    = "demo"
	demoChannel = "match"
	// demoBudget bounds the whole scenario.
	demoBudget = 60 * time.Second
	// demoWait bounds each "wait until the gateway sees it" step.
	demoWait = 10 * time.Second
)

var errDemoCheck = errors.New("demo check failed")

func newDemoCmd() *cobra.Command {
	var logLevel string
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the narrated three-node scenario in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), demoBudget)
			defer cancel()
			d := &demo{w: cmd.OutOrStdout(), logLevel: logLevel, errw: cmd.ErrOrStderr()}
			return d.run(ctx)
		},
	}
	c.Flags().StringVar(&logLevel, "log-level", "disabled", "log level of the embedded nodes (logs go to stderr)")
	return c
}

type demoNode struct {
	name   string
	weight int
	host   *zlink.Host
	node   *routemesh.Node
}

type demo struct {
	w        io.Writer
	errw     io.Writer
	logLevel string
	store    location.Store
	servers  []*demoNode
	gw       *demoNode
	results  []string
	failed   bool
	names    map[string]string // RID → demo name
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.w, format+"\n", args...) }

// check records one scenario assertion for the summary.
func (d *demo) check(step string, ok bool, detail string) {
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		d.failed = true
	}
	d.results = append(d.results, fmt.Sprintf("  %s %s: %s", mark, step, detail))
}

var demoLiveness = routemesh.LivenessConfig{Interval: 100 * time.Millisecond, MaxGap: 5, LastHeard: time.Second}

func (d *demo) start(ctx context.Context, name string, weight int) (*demoNode, error) {
	log, err := newLogger(d.errw, d.logLevel, "console")
	if err != nil {
		return nil, err
	}
	opts := zlink.NewOptions().SetLogger(log).SetLocationStore(d.store)
	// Automatic topology over the in-memory Location Store: every node
	// publishes its descriptor and the discovery actors connect them.
	mb := opts.AddRouteMesh(demoMesh).SetRoutingIDPrefix(name).ConfigureLiveness(demoLiveness).
		ConfigureDiscovery(routemesh.DiscoveryConfig{DescriptorTTL: 2 * time.Second, Poll: 100 * time.Millisecond})
	var bi *builtins
	if weight >= 0 {
		bi = newBuiltins()
		bi.register(mb.Channel(demoChannel).Server().SetWeight(weight), demoChannel)
		// Every server is also an Object Server hosting the counter Spot kind.
		spot.Enable(mb.SetObjectRole(routemesh.ObjectServer), counter.Kind())
	} else {
		mb.Channel(demoChannel).Client().SetSelectionSeed(20240601)
		spot.Enable(mb.SetObjectRole(routemesh.ObjectClient))
	}
	h, err := zlink.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	n := h.Mesh(demoMesh)
	if bi != nil {
		bi.setRID(n.RID())
	}
	if d.names == nil {
		d.names = map[string]string{}
	}
	d.names[n.RID()] = name
	return &demoNode{name: name, weight: weight, host: h, node: n}, nil
}

func (d *demo) run(ctx context.Context) (err error) {
	began := time.Now()
	d.store = location.NewMemory()
	defer d.store.Close()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range append(d.servers, d.gw) {
			if n != nil {
				_ = n.host.Stop(sctx)
			}
		}
	}()

	d.say("zlink-node demo: mesh %q, channel %q, in-memory Location Store, automatic topology", demoMesh, demoChannel)
	d.say("starting three Server nodes (alpha=100, beta=300, gamma=600) and a Client-role gateway, each in its own host")
	for _, s := range []struct {
		name   string
		weight int
	}{{"alpha", 100}, {"beta", 300}, {"gamma", 600}} {
		n, err := d.start(ctx, s.name, s.weight)
		if err != nil {
			return err
		}
		d.servers = append(d.servers, n)
		d.say("  %-6s rid=%s endpoint=%s weight=%d", n.name, n.node.RID(), n.node.Endpoint(), s.weight)
	}
	if d.gw, err = d.start(ctx, "gateway", -1); err != nil {
		return err
	}
	if err := d.waitGateway(ctx, "every Server ready at the gateway", func(st routemesh.Status) bool {
		return st.CountPeers(routemesh.PeerReady) == len(d.servers)
	}); err != nil {
		return err
	}
	d.say("  gateway rid=%s sees 3 ready peers", d.gw.node.RID())
	alpha, beta, gamma := d.servers[0], d.servers[1], d.servers[2]

	// Step 1: weighted select-one.
	d.say("\nstep 1: weighted select-one — 1000 echo calls from the gateway")
	got := d.burst(ctx, 1000, 16, packetEcho, "hello")
	within := got.fails == 0
	for _, s := range d.servers {
		share := 100 * float64(got.byRID[s.name]) / 1000
		want := 100 * float64(s.weight) / 1000
		d.say("  %-6s weight=%-4d calls=%-4d %5.1f%%  (expected %4.1f%%)", s.name, s.weight, got.byRID[s.name], share, want)
		within = within && share > want-5 && share < want+5
	}
	d.check("weighted select-one", within, fmt.Sprintf("shares within 5 points of the weights, %d failures", got.fails))

	// Step 2: weight → 0.
	d.say("\nstep 2: weight → 0 — beta's weight on %q set to 0 at runtime", demoChannel)
	if err := beta.node.SetWeight(ctx, demoChannel, 0); err != nil {
		return err
	}
	probes, err := d.waitCandidate(ctx, beta.node.RID(), func(c routemesh.Candidate) bool { return c.Weight == 0 })
	if err != nil {
		return err
	}
	d.say("  the gateway saw the new weight after %d probe call(s)", probes)
	got = d.burst(ctx, 500, 16, packetEcho, "after-weight-0")
	d.say("  500 calls: alpha=%d beta=%d gamma=%d failures=%d", got.byRID["alpha"], got.byRID["beta"], got.byRID["gamma"], got.fails)
	d.check("weight 0", got.byRID["beta"] == 0 && got.fails == 0, fmt.Sprintf("beta got %d of 500 new calls", got.byRID["beta"]))
	if err := beta.node.SetWeight(ctx, demoChannel, beta.weight); err != nil {
		return err
	}
	if _, err := d.waitCandidate(ctx, beta.node.RID(), func(c routemesh.Candidate) bool { return int(c.Weight) == beta.weight }); err != nil {
		return err
	}
	d.say("  beta's weight restored to %d", beta.weight)

	// Step 3: drain with work in flight.
	d.say("\nstep 3: drain — 24 slow calls (sleep 300ms) in flight, then gamma drains")
	var slow burstResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); slow = d.burst(ctx, 24, 24, packetSleep, "300ms") }()
	if err := waitUntil(ctx, "work in flight on gamma", func() bool {
		st, err := gamma.node.Status(ctx)
		return err == nil && st.Inflight > 0
	}); err != nil {
		return err
	}
	st, _ := gamma.node.Status(ctx)
	t0 := time.Now()
	derr := gamma.node.Drain(ctx)
	d.say("  gamma had %d call(s) in flight; Drain returned after %s (err=%v)", st.Inflight, time.Since(t0).Round(time.Millisecond), derr)
	wg.Wait()
	d.say("  the slow calls: ok=%d failures=%d (alpha=%d beta=%d gamma=%d)", slow.ok, slow.fails, slow.byRID["alpha"], slow.byRID["beta"], slow.byRID["gamma"])
	if _, err := d.waitCandidate(ctx, gamma.node.RID(), func(c routemesh.Candidate) bool { return c.Skip == "draining" }); err != nil {
		return err
	}
	got = d.burst(ctx, 300, 16, packetEcho, "after-drain")
	d.say("  300 new calls: alpha=%d beta=%d gamma=%d failures=%d", got.byRID["alpha"], got.byRID["beta"], got.byRID["gamma"], got.fails)
	d.check("drain", derr == nil && slow.fails == 0 && got.byRID["gamma"] == 0 && got.fails == 0,
		fmt.Sprintf("in-flight work finished (%d ok), gamma left selection", slow.ok))

	// Step 4: a node killed.
	d.say("\nstep 4: kill — alpha's host is stopped abruptly (no drain, no grace)")
	dead, cancelDead := context.WithCancel(ctx)
	cancelDead()
	_ = alpha.host.Stop(dead)
	if err := d.waitGateway(ctx, "the gateway notices alpha is gone", func(st routemesh.Status) bool {
		p, ok := st.Peer(alpha.node.RID())
		return !ok || p.State != routemesh.PeerReady
	}); err != nil {
		return err
	}
	gst, _ := d.gw.node.Status(ctx)
	if p, ok := gst.Peer(alpha.node.RID()); ok {
		d.say("  the gateway sees alpha as %s", p.State)
	} else {
		d.say("  the gateway no longer lists alpha (connection lost, descriptor withdrawn)")
	}
	got = d.burst(ctx, 300, 16, packetEcho, "after-kill")
	d.say("  300 calls rerouted: alpha=%d beta=%d gamma=%d failures=%d", got.byRID["alpha"], got.byRID["beta"], got.byRID["gamma"], got.fails)
	d.check("kill", got.fails == 0 && got.byRID["alpha"] == 0, "no failures after the gateway saw alpha gone")

	// Step 5: Spots.
	if err := d.spots(ctx); err != nil {
		return err
	}

	d.say("\nsummary (%s):", time.Since(began).Round(time.Millisecond))
	for _, r := range d.results {
		d.say("%s", r)
	}
	if d.failed {
		d.say("demo: FAILED")
		return errSilent
	}
	d.say("demo: ok")
	return nil
}

type burstResult struct {
	ok, fails int
	byRID     map[string]int
	kinds     map[string]int
}

// burst sends n calls from the gateway, conc at a time.
func (d *demo) burst(ctx context.Context, n, conc int, packet, data string) burstResult {
	res := burstResult{byRID: map[string]int{}, kinds: map[string]int{}}
	var mu sync.Mutex
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, rid, err := d.gw.node.CallFrom(cctx, demoChannel, packet, []byte(data))
				cancel()
				mu.Lock()
				if err != nil {
					res.fails++
					res.kinds[wire.CodeOf(err).String()]++
				} else {
					res.ok++
					res.byRID[d.nameOf(rid)]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if res.fails > 0 {
		d.say("  failures by kind: %s", formatCounts(res.kinds))
	}
	return res
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// nameOf returns the demo name of a node's RID.
func (d *demo) nameOf(rid string) string {
	if name, ok := d.names[rid]; ok {
		return name
	}
	return rid
}

// waitGateway waits until the gateway's status satisfies cond.
func (d *demo) waitGateway(ctx context.Context, what string, cond func(routemesh.Status) bool) error {
	return waitUntil(ctx, what, func() bool {
		st, err := d.gw.node.Status(ctx)
		return err == nil && cond(st)
	})
}

// waitCandidate sends probe calls until the gateway's last selection shows
// rid's candidate satisfying cond; it returns the number of probes.
func (d *demo) waitCandidate(ctx context.Context, rid string, cond func(routemesh.Candidate) bool) (int, error) {
	probes := 0
	err := waitUntil(ctx, "the gateway sees "+rid+" change", func() bool {
		probes++
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, _, _ = d.gw.node.CallFrom(cctx, demoChannel, packetEcho, []byte("probe"))
		cancel()
		st, err := d.gw.node.Status(ctx)
		if err != nil {
			return false
		}
		for _, ch := range st.Channels {
			if ch.Name != demoChannel || ch.LastSelection == nil {
				continue
			}
			for _, c := range ch.LastSelection.Candidates {
				if c.RID == rid && cond(c) {
					return true
				}
			}
		}
		return false
	})
	return probes, err
}

// waitUntil polls cond until it holds or demoWait passes.
func waitUntil(ctx context.Context, what string, cond func() bool) error {
	deadline := time.Now().Add(demoWait)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: timed out waiting until %s", errDemoCheck, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// spots is step 5: counter Spots addressed by ID from the gateway; their
// owner stops and a new Object Server takes them over.
func (d *demo) spots(ctx context.Context) error {
	d.say("\nstep 5: Spots — counter player-N addressed by ID, never by node")
	owner := d.servers[1] // beta: alpha is gone, gamma is draining
	if err := spot.WaitReady(ctx, d.gw.node); err != nil {
		return err
	}
	const n = 20
	first := map[string]spot.Result{}
	fails := 0
	for i := range n {
		id := fmt.Sprintf("player-%d", i)
		for range 3 {
			if _, res, err := spot.CallRaw(ctx, d.gw.node, counter.KindName, id, "add", []byte("1")); err != nil {
				fails++
			} else {
				first[id] = res
			}
		}
	}
	owners := map[string]int{}
	for _, r := range first {
		owners[d.nameOf(r.Owner)]++
	}
	d.say("  %d Spots, 3 adds each: owners %s, failures=%d", n, formatCounts(owners), fails)
	d.say("  delta (a new Object Server) starts; beta stops cleanly: it saves and releases its Spots before it leaves")
	delta, err := d.start(ctx, "delta", 100)
	if err != nil {
		return err
	}
	d.servers = append(d.servers, delta)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_ = owner.host.Stop(sctx)
	cancel()
	if err := d.waitGateway(ctx, "the gateway sees delta and not beta", func(st routemesh.Status) bool {
		pb, okb := st.Peer(owner.node.RID())
		pd, okd := st.Peer(delta.node.RID())
		return (!okb || pb.State != routemesh.PeerReady) && okd && pd.State == routemesh.PeerReady
	}); err != nil {
		return err
	}
	moved, higher := 0, 0
	fails = 0
	values := map[string]int{}
	for i := range n {
		id := fmt.Sprintf("player-%d", i)
		out, res, err := spot.CallRaw(ctx, d.gw.node, counter.KindName, id, "add", []byte("1"))
		if err != nil {
			fails++
			continue
		}
		values[string(out)]++
		if res.Owner == delta.node.RID() {
			moved++
		}
		if res.Epoch > first[id].Epoch {
			higher++
		}
	}
	d.say("  after: %d of %d Spots answer from delta with a higher epoch (%d), failures=%d; values %s (3 adds before, 1 after: the state came along)",
		moved, n, higher, fails, formatCounts(values))
	d.check("spots", fails == 0 && moved == n && higher == n && len(first) == n && values["4"] == n,
		"every Spot answered, one owner at a time, and moved with its state on its owner's stop")
	return nil
}
