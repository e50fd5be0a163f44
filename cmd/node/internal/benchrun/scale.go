package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
)

func init() {
	register(Bench{
		Name: "scale",
		About: "N automatic MeshNodes in one process over a real redis-server (N = 4…128, --nodes): time to full mesh, idle CPU, " +
			"Redis commands and bytes per node, heap and goroutines per node and per peer, file descriptors, weight propagation, " +
			"an Object Server mesh and a 90 % Object Client tier, the heartbeat traffic's floor over raw TCP (the idle CPU goal's baseline); " +
			"the goals met or missed",
		Explicit: true,
		Run:      runScale,
	})
}

// Goals of the scale bench (issue 26: item 1 the store's cost at rest,
// item 2 the cost of a peer connection), at 64 nodes.
const (
	scaleGoalN            = 64
	goalCmdsPerNode       = 5.0    // Redis commands/s of a node without Spots
	goalCmdsPerServer     = 10.0   // Redis commands/s of an Object Server, lease renewals included
	goalOutPerNode        = 1000.0 // Redis bytes/s sent to each node
	goalHeapPerPeer       = 32 << 10
	goalGoroutinesPerPeer = 2.0
	goalCPUPerNode        = 0.25 // % of a core
)

type scaleNodesKey struct{}

// WithScaleNodes asks `bench scale` for these mesh sizes instead of 4, 8,
// 16, 32, 64 and 128.
func WithScaleNodes(ctx context.Context, sizes []int) context.Context {
	return context.WithValue(ctx, scaleNodesKey{}, sizes)
}

// scaleMix is the kind of mesh one run starts.
type scaleMix string

const (
	// mixPlain: automatic nodes without Spots, every pair connected (node 0
	// serves channel "bench", the others are its Clients).
	mixPlain scaleMix = "plain"
	// mixServers: every node an Object Server with the Spot runtime (one
	// kind, no Spot active), every pair connected.
	mixServers scaleMix = "servers"
	// mixClients: 90 % Object Clients without Server membership (with the
	// Spot runtime, hosting nothing) and 10 % Object Servers: the clients
	// connect to the servers only.
	mixClients scaleMix = "clients90"
)

// scalePlan is what one bench run does.
type scalePlan struct {
	sizes    []int
	servers  int // size of the Object Server run (0: none)
	clients  int // size of the client-tier run (0: none)
	window   time.Duration
	settle   time.Duration
	changes  int // weight changes timed per plain run
	formWait time.Duration
}

func scalePlanFor(ctx context.Context, quick bool) scalePlan {
	p := scalePlan{sizes: []int{4, 8, 16, 32, 64, 128}, window: 10 * time.Second, settle: 3 * time.Second, changes: 10,
		formWait: 5 * time.Minute}
	if quick {
		p = scalePlan{sizes: []int{4, 8}, window: 2 * time.Second, settle: 500 * time.Millisecond, changes: 4, formWait: time.Minute}
	}
	if sizes, ok := ctx.Value(scaleNodesKey{}).([]int); ok && len(sizes) > 0 {
		p.sizes = slices.Clone(sizes)
	}
	p.window = durationFrom(ctx, p.window)
	if slices.Contains(p.sizes, scaleGoalN) {
		p.servers = scaleGoalN
	} else {
		p.servers = slices.Max(p.sizes)
	}
	p.clients = slices.Max(p.sizes)
	return p
}

// scaleSpec is one child process's job, passed as JSON in
// $ZLINK_SCALE_CHILD. N 0 asks for the baseline.
type scaleSpec struct {
	Addr     string        `json:"addr"`
	Mix      scaleMix      `json:"mix"`
	N        int           `json:"n"`
	Window   time.Duration `json:"window"`
	Settle   time.Duration `json:"settle"`
	FormWait time.Duration `json:"form_wait"`
	Changes  int           `json:"changes"`
}

// scaleResult is what a child measured (JSON on its RESULT line). Heap,
// goroutines and file descriptors are the growth of the process over one
// that already ran a node (so one-time costs of the process are left out).
type scaleResult struct {
	Mix        scaleMix          `json:"mix"`
	N          int               `json:"n"`
	Servers    int               `json:"servers"`
	Peers      int               `json:"peers"` // ready peers summed over the nodes (2 per connection)
	Form       time.Duration     `json:"form"`
	Window     time.Duration     `json:"window"`
	Commands   float64           `json:"commands"` // Redis commands per second, all nodes
	Out        float64           `json:"out"`      // Redis bytes sent per second, all nodes
	Calls      map[string]uint64 `json:"calls"`
	CPU        float64           `json:"cpu"`        // process CPU per node, % of a core
	Heap       float64           `json:"heap"`       // per node
	Goroutines float64           `json:"goroutines"` // per node
	FDs        int               `json:"fds"`
	WeightP50  time.Duration     `json:"weight_p50"`
	WeightP99  time.Duration     `json:"weight_p99"`
	Changes    int               `json:"changes"`
}

// scaleFixed is the cost of one node without peers (the baseline).
type scaleFixed struct {
	heap, gor float64
	fds       int
}

func runScale(ctx context.Context, w io.Writer, quick bool) error {
	plan := scalePlanFor(ctx, quick)
	for _, n := range plan.sizes {
		if n < 2 {
			return fmt.Errorf("scale: --nodes %d: a mesh needs at least 2 nodes", n)
		}
	}
	addr, stop, err := startScaleRedis()
	if err != nil {
		return err
	}
	defer stop()
	limit := fdLimit()
	fmt.Fprintf(w, "setup: automatic MeshNodes in one process per run (a fresh one each), each node with its own Redis client, "+
		"one redis-server (%s); default timings (descriptor TTL 5s, discovery and watch poll 1s, Spot lease renewed every 1s); "+
		"idle window %v; GOMAXPROCS=%d; file descriptor limit %s\n", addr, plan.window, runtime.GOMAXPROCS(0), fdString(limit))

	spec := scaleSpec{Addr: addr, Window: plan.window, Settle: plan.settle, FormWait: plan.formWait, Changes: plan.changes}
	base, err := scaleInChild(ctx, spec)
	if err != nil {
		return fmt.Errorf("scale: baseline: %w", err)
	}
	fixed := scaleFixed{heap: base.Heap, gor: base.Goroutines, fds: base.FDs}
	fmt.Fprintf(w, "scale baseline (a node alone in its mesh): heap=%s goroutines=%.1f fds=%d\n", bytesString(fixed.heap), fixed.gor, fixed.fds)

	results := map[string]scaleResult{}
	var failed []string
	run := func(mix scaleMix, n int) error {
		if why, skip := scaleSkip(fixed, mix, n, limit); skip {
			fmt.Fprintf(w, "scale run=%s nodes=%d skipped: %s\n", mix, n, why)
			return nil
		}
		spec.Mix, spec.N = mix, n
		r, err := scaleInChild(ctx, spec)
		if err != nil {
			fmt.Fprintf(w, "scale run=%s nodes=%d failed: %v\n", mix, n, err)
			failed = append(failed, fmt.Sprintf("%s/%d", mix, n))
			return ctx.Err()
		}
		results[fmt.Sprintf("%s/%d", mix, n)] = r
		if mix == mixFloor {
			printFloor(w, r)
		} else {
			printScale(w, r, fixed)
		}
		return nil
	}
	for _, n := range plan.sizes {
		if err := run(mixPlain, n); err != nil {
			return err
		}
	}
	if plan.servers > 0 {
		// The idle CPU goal's baseline, at the goal's size.
		if err := run(mixFloor, plan.servers); err != nil {
			return err
		}
	}
	if plan.servers > 0 {
		if err := run(mixServers, plan.servers); err != nil {
			return err
		}
	}
	if plan.clients > 0 {
		if err := run(mixClients, plan.clients); err != nil {
			return err
		}
	}
	printScaleGoals(w, results, fixed)
	if len(failed) > 0 {
		return fmt.Errorf("scale: runs failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// scaleServers is how many Object Servers (mixClients) or channel servers
// a run of mix with n nodes has.
func scaleServers(mix scaleMix, n int) int {
	switch mix {
	case mixClients:
		return max(1, n/10)
	case mixServers:
		return n
	}
	return 1
}

// scalePeers is the ready peers a full mesh of the run shows, summed over
// its nodes (each connection counts on both sides).
func scalePeers(mix scaleMix, n, servers int) int {
	if mix == mixClients {
		clients := n - servers
		return servers*(servers-1) + 2*clients*servers
	}
	return n * (n - 1)
}

// scaleSkip says why a run of mix with n nodes cannot run in a process
// that may open limit files (0: unknown, never skipped).
func scaleSkip(fixed scaleFixed, mix scaleMix, n, limit int) (string, bool) {
	servers := scaleServers(mix, n)
	need := scaleFDs(fixed, mix, n, servers)
	if limit <= 0 || need <= limit {
		return "", false
	}
	return fmt.Sprintf("needs about %d file descriptors (%d per node, one per side of each of %d connections), the process may open %d",
		need, fixed.fds, scalePeers(mix, n, servers)/2, limit), true
}

// scaleFDs estimates the file descriptors a run needs: each node's own
// (baseline) plus one per side of each connection, and some room.
func scaleFDs(fixed scaleFixed, mix scaleMix, n, servers int) int {
	return n*fixed.fds + scalePeers(mix, n, servers) + 256
}

// The runs happen in child processes: the bench re-executes its own binary
// (zlink-node, or the test binary) with $ZLINK_SCALE_CHILD set, and this
// package's init runs the job instead of the program. A fresh process per
// run keeps one run's heap, goroutines and file descriptors out of the
// next one's numbers.
func init() {
	if job := os.Getenv(scaleChildEnv); job != "" {
		os.Exit(scaleChildMain(job, os.Stdout))
	}
}

const scaleChildEnv = "ZLINK_SCALE_CHILD"

// scaleChildMain runs the job and prints "RESULT <json>" or
// "FAILED <reason>"; it returns the exit code.
func scaleChildMain(job string, out io.Writer) int {
	var spec scaleSpec
	if err := json.Unmarshal([]byte(job), &spec); err != nil {
		fmt.Fprintf(out, "FAILED bad job: %v\n", err)
		return 2
	}
	r, err := scaleMeasure(context.Background(), spec)
	if err != nil {
		fmt.Fprintf(out, "FAILED %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 2
	}
	b, _ := json.Marshal(r)
	fmt.Fprintf(out, "RESULT %s\n", b)
	return 0
}

// scaleInChild runs spec in a child process and returns its result.
func scaleInChild(ctx context.Context, spec scaleSpec) (scaleResult, error) {
	self, err := os.Executable()
	if err != nil {
		return scaleResult{}, err
	}
	job, err := json.Marshal(spec)
	if err != nil {
		return scaleResult{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, spec.FormWait+2*spec.Window+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, self)
	cmd.Env = append(os.Environ(), scaleChildEnv+"="+string(job))
	var stderr cmpTailBuffer
	stderr.max = 8 << 10
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var r scaleResult
	for _, line := range strings.Split(string(stdout), "\n") {
		if v, ok := strings.CutPrefix(line, "RESULT "); ok {
			if jerr := json.Unmarshal([]byte(v), &r); jerr != nil {
				return r, fmt.Errorf("child result %q: %w", v, jerr)
			}
			return r, nil
		}
		if v, ok := strings.CutPrefix(line, "FAILED "); ok {
			return r, errors.New(v)
		}
	}
	return r, fmt.Errorf("child process ended without a result (%v): %s", err, strings.TrimSpace(stderr.String()))
}

// scaleMeasure runs one job in this process: after a warm-up node, the
// baseline (four nodes each alone in a mesh) or a mesh of spec.N nodes,
// formed and at rest, then measured.
func scaleMeasure(ctx context.Context, spec scaleSpec) (scaleResult, error) {
	r := scaleResult{Mix: spec.Mix, N: spec.N, Servers: scaleServers(spec.Mix, spec.N)}
	var hosts []*zlink.Host
	var stores []location.Store
	defer func() { scaleStop(hosts, stores) }()
	warm, warmStore, err := scaleNode(ctx, spec.Addr, "scale-warm", mixPlain, 0, 1)
	if err != nil {
		return r, err
	}
	warmStop := sync.OnceFunc(func() { scaleStop([]*zlink.Host{warm}, []location.Store{warmStore}) })
	defer warmStop()
	if err := waitCond(ctx, func() bool { return warm.Mesh("scale-warm").MeshView().Rounds > 1 }); err != nil {
		return r, err
	}
	heap0, gor0, fd0 := liveHeap(), runtime.NumGoroutine(), openFDs()
	measure := func(nodes int) {
		heap, gor, fds := liveHeap(), runtime.NumGoroutine(), openFDs()
		r.Heap = float64(int64(heap)-int64(heap0)) / float64(nodes)
		r.Goroutines = float64(gor-gor0) / float64(nodes)
		if fd0 >= 0 && fds >= 0 {
			r.FDs = fds - fd0
		}
	}

	if spec.Mix == mixFloor {
		warmStop()
		return scaleFloor(ctx, spec)
	}
	if spec.N == 0 { // the baseline
		const alone = 4
		for i := range alone {
			mesh := fmt.Sprintf("scale-alone-%d", i)
			h, s, err := scaleNode(ctx, spec.Addr, mesh, mixPlain, 0, 1)
			if err != nil {
				return r, err
			}
			hosts, stores = append(hosts, h), append(stores, s)
			if err := waitCond(ctx, func() bool { return h.Mesh(mesh).MeshView().Rounds > 1 }); err != nil {
				return r, err
			}
		}
		measure(alone)
		r.FDs = (r.FDs + alone - 1) / alone
		return r, nil
	}

	n, mix := spec.N, spec.Mix
	mesh := fmt.Sprintf("scale-%s-%d", mix, n)
	start := time.Now()
	for i := range n {
		h, s, err := scaleNode(ctx, spec.Addr, mesh, mix, i, r.Servers)
		if err != nil {
			return r, err
		}
		hosts, stores = append(hosts, h), append(stores, s)
	}
	nodes := make([]*routemesh.Node, n)
	for i, h := range hosts {
		nodes[i] = h.Mesh(mesh)
	}
	fctx, cancel := context.WithTimeout(ctx, spec.FormWait)
	defer cancel()
	for i, node := range nodes {
		want := n - 1
		if mix == mixClients && i >= r.Servers {
			want = r.Servers
		}
		if err := node.WaitPeers(fctx, want); err != nil {
			return r, fmt.Errorf("not formed within %v: %s: %w", spec.FormWait, node.RID(), err)
		}
		r.Peers += want
	}
	r.Form = time.Since(start)
	if err := waitCond(fctx, func() bool {
		for _, node := range nodes {
			if len(node.MeshView().Descriptors) != n {
				return false
			}
		}
		return true
	}); err != nil {
		return r, fmt.Errorf("views of the whole mesh: %w", err)
	}
	if mix != mixPlain {
		for _, node := range nodes {
			if err := spot.WaitReady(fctx, node); err != nil {
				return r, err
			}
		}
	}
	if err := sleepCtx(ctx, spec.Settle); err != nil {
		return r, err
	}
	measure(n)
	warmStop() // its Redis commands and CPU stay out of the window

	// The idle window: Redis counts commands and bytes, the process its CPU.
	before, err := locationtest.ReadLoad(spec.Addr)
	if err != nil {
		return r, err
	}
	stopProfile := scaleProfile(fmt.Sprintf("%s-%d", mix, n))
	cpu0 := cmpProcessCPU()
	if err := sleepCtx(ctx, spec.Window); err != nil {
		stopProfile()
		return r, err
	}
	cpu := cmpProcessCPU() - cpu0
	stopProfile()
	after, err := locationtest.ReadLoad(spec.Addr)
	if err != nil {
		return r, err
	}
	load := after.Sub(before)
	r.Window = after.At.Sub(before.At)
	secs := r.Window.Seconds()
	r.Calls = load.Calls
	r.Commands = float64(load.Commands()) / secs
	r.Out = float64(load.NetOut) / secs
	r.CPU = 100 * cpu.Seconds() / secs / float64(n)

	if mix == mixPlain {
		lat, err := scaleWeights(ctx, nodes, spec.Changes)
		if err != nil {
			return r, err
		}
		r.Changes = len(lat)
		r.WeightP50, r.WeightP99 = percentile(lat, 0.5), percentile(lat, 0.99)
	}
	return r, nil
}

// scaleNode starts node i of a run, with a Redis store of its own.
func scaleNode(ctx context.Context, addr, mesh string, mix scaleMix, i, servers int) (*zlink.Host, location.Store, error) {
	store, err := location.NewRedis(ctx, location.RedisConfig{Addr: addr, Prefix: "scale"})
	if err != nil {
		return nil, nil, err
	}
	o := zlink.NewOptions().SetLocationStore(store).SetLogger(zerolog.Nop())
	b := o.AddRouteMesh(mesh).SetRoutingIDPrefix(fmt.Sprintf("n%03d", i))
	switch {
	case mix == mixPlain && i == 0:
		b.Channel("bench").Server().SetWeight(100).HandleRequest("ping", func(*routemesh.Context, []byte) ([]byte, error) { return nil, nil })
	case mix == mixPlain:
		b.Channel("bench").Client()
	case mix == mixServers || i < servers:
		b.SetObjectRole(routemesh.ObjectServer)
		spot.EnableWith(b, spot.Config{}, spotsBenchKind())
	default:
		b.SetObjectRole(routemesh.ObjectClient)
		spot.EnableWith(b, spot.Config{})
	}
	h, err := zlink.Start(ctx, o)
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	return h, store, nil
}

// scaleStop stops every node (in parallel) and closes the stores.
func scaleStop(hosts []*zlink.Host, stores []location.Store) {
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = h.Stop(ctx)
		}()
	}
	wg.Wait()
	for _, s := range stores {
		_ = s.Close()
	}
}

// scaleWeights toggles node 0's weight on "bench" between 0 and 100 and
// times each change until every other node's selection reflects it: a
// weight above 0 seen by WaitReady (no polling), a weight of 0 by a call
// that finds no target (tried every millisecond).
func scaleWeights(ctx context.Context, nodes []*routemesh.Node, changes int) ([]time.Duration, error) {
	var lat []time.Duration
	server := nodes[0]
	for i := range changes {
		weight := 0
		if i%2 == 1 {
			weight = 100
		}
		start := time.Now()
		if err := server.SetWeight(ctx, "bench", weight); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, len(nodes))
		for _, n := range nodes[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if weight > 0 {
					err = n.WaitReady(wctx, "bench")
				} else {
					for err == nil {
						cctx, cancel := context.WithTimeout(wctx, time.Second)
						_, cerr := n.Call(cctx, "bench", "ping", nil)
						cancel()
						if errors.Is(cerr, zlink.ErrNoTarget) {
							return
						}
						err = sleepCtx(wctx, time.Millisecond)
					}
				}
				if err != nil {
					ready, _ := n.PeerReady(server.RID())
					errs <- fmt.Errorf("weight %d did not reach %s within 30s (its link to the server ready: %v): %w", weight, n.RID(), ready, err)
				}
			}()
		}
		wg.Wait()
		cancel()
		select {
		case err := <-errs:
			return nil, err
		default:
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

func percentile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// perPeer is what a peer (one side of a connection) adds to the process:
// the run's growth less that of its nodes alone, over its peers.
func perPeer(perNode, fixed float64, r scaleResult) float64 {
	if r.Peers == 0 {
		return 0
	}
	return (perNode - fixed) * float64(r.N) / float64(r.Peers)
}

func printScale(w io.Writer, r scaleResult, fixed scaleFixed) {
	per := float64(r.N)
	weight := "weight_p50=- weight_p99=-"
	if r.Changes > 0 {
		weight = fmt.Sprintf("weight_p50=%v weight_p99=%v", r.WeightP50.Round(100*time.Microsecond), r.WeightP99.Round(100*time.Microsecond))
	}
	roles := ""
	if r.Mix == mixClients {
		roles = fmt.Sprintf(" object_servers=%d object_clients=%d", r.Servers, r.N-r.Servers)
	}
	fmt.Fprintf(w, "scale run=%s nodes=%d%s connections=%d full_mesh=%v cpu_per_node=%.3f%% redis_cmds=%.1f/s per_node=%.2f/s "+
		"redis_out=%s/s per_node=%s/s heap_per_node=%s heap_per_peer=%s goroutines_per_node=%.1f goroutines_per_peer=%.2f "+
		"fds=%d fds_per_node=%.1f %s\n",
		r.Mix, r.N, roles, r.Peers/2, r.Form.Round(time.Millisecond), r.CPU, r.Commands, r.Commands/per, bytesString(r.Out),
		bytesString(r.Out/per), bytesString(r.Heap), bytesString(perPeer(r.Heap, fixed.heap, r)), r.Goroutines,
		perPeer(r.Goroutines, fixed.gor, r), r.FDs, float64(r.FDs)/per, weight)
	fmt.Fprintf(w, "scale run=%s nodes=%d redis_commands_per_node_per_s:%s\n", r.Mix, r.N, topCalls(r.Calls, r.Window.Seconds()*per))
}

// topCalls lists the commands by rate, busiest first.
func topCalls(calls map[string]uint64, div float64) string {
	names := make([]string, 0, len(calls))
	for k := range calls {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return calls[names[i]] > calls[names[j]] })
	var b strings.Builder
	for _, k := range names {
		if v := float64(calls[k]) / div; v >= 0.005 {
			fmt.Fprintf(&b, " %s=%.2f", k, v)
		}
	}
	return b.String()
}

// printScaleGoals prints each goal of items 1 and 2, measured at 64 nodes
// (or at the largest mesh that ran, which the line names).
func printScaleGoals(w io.Writer, results map[string]scaleResult, fixed scaleFixed) {
	pick := func(mix scaleMix) (scaleResult, bool) {
		if r, ok := results[fmt.Sprintf("%s/%d", mix, scaleGoalN)]; ok {
			return r, true
		}
		var best scaleResult
		found := false
		for _, r := range results {
			if r.Mix == mix && (!found || r.N > best.N) {
				best, found = r, true
			}
		}
		return best, found
	}
	line := func(item, what string, r scaleResult, ok bool, value string, met bool) {
		if !ok {
			fmt.Fprintf(w, "goal %s %s: not measured\n", item, what)
			return
		}
		at := ""
		if r.N != scaleGoalN {
			at = fmt.Sprintf(" (at %d nodes; the goal is for %d)", r.N, scaleGoalN)
		}
		fmt.Fprintf(w, "goal %s %s: %s%s %s\n", item, what, value, at, spotsVerdict(met))
	}
	p, okP := pick(mixPlain)
	s, okS := pick(mixServers)
	cmdsP, cmdsS := p.Commands/float64(max(p.N, 1)), s.Commands/float64(max(s.N, 1))
	outP := p.Out / float64(max(p.N, 1))
	heapPeer, gorPeer := perPeer(p.Heap, fixed.heap, p), perPeer(p.Goroutines, fixed.gor, p)
	line("item1", fmt.Sprintf("Redis commands per node without Spots ≤ %.0f/s", goalCmdsPerNode), p, okP,
		fmt.Sprintf("%.2f/s", cmdsP), cmdsP <= goalCmdsPerNode)
	line("item1", fmt.Sprintf("Redis commands per Object Server ≤ %.0f/s", goalCmdsPerServer), s, okS,
		fmt.Sprintf("%.2f/s", cmdsS), cmdsS <= goalCmdsPerServer)
	line("item1", "Redis bytes out per node ≤ 1 KB/s", p, okP, bytesString(outP)+"/s", outP <= goalOutPerNode)
	line("item2", "heap per peer connection ≤ 32 KiB", p, okP, bytesString(heapPeer), heapPeer <= goalHeapPerPeer)
	line("item2", "goroutines per connection ≤ 2", p, okP, fmt.Sprintf("%.2f", gorPeer), gorPeer <= goalGoroutinesPerPeer)
	floor := ""
	if f, ok := results[fmt.Sprintf("%s/%d", mixFloor, p.N)]; ok && okP {
		floor = fmt.Sprintf(" (the heartbeat floor of %d nodes in the same run, raw TCP without ZLink: %.3f%%)", p.N, f.CPU)
	}
	line("item2", fmt.Sprintf("idle CPU per node ≤ %.2f %% of a core", goalCPUPerNode), p, okP,
		fmt.Sprintf("%.3f%%%s", p.CPU, floor), p.CPU <= goalCPUPerNode)
}

func bytesString(b float64) string {
	switch a := b; {
	case a >= 1<<20 || a <= -(1<<20):
		return fmt.Sprintf("%.1fMiB", b/(1<<20))
	case a >= 1<<10 || a <= -(1<<10):
		return fmt.Sprintf("%.1fKiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0fB", b)
}

// waitCond polls cond every 20 ms until it holds or ctx ends.
func waitCond(ctx context.Context, cond func() bool) error {
	for !cond() {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// openFDs counts the process's open file descriptors (-1 where
// /proc/self/fd does not exist).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// fdLimit is the process's soft limit on open files (0: unknown).
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(rl.Cur)
}

func fdString(n int) string {
	if n <= 0 {
		return "unknown"
	}
	return strconv.Itoa(n)
}

// startScaleRedis starts a redis-server without persistence on a free
// loopback port, with room for every client of the largest mesh.
func startScaleRedis() (string, func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("scale: redis-server not installed (scripts/ensure-deps.sh installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--protected-mode", "no", "--maxclients", "10000")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := locationtest.ReadLoad(addr); err == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("scale: redis-server on %s did not answer", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleepCtx waits d or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// scaleProfile writes a CPU profile of the idle window into the directory
// ZLINK_SCALE_PROFILE names (unset: none), as <run>.cpu.pprof; it returns
// the function that ends it.
func scaleProfile(run string) func() {
	dir := os.Getenv("ZLINK_SCALE_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, run+".cpu.pprof"))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}
