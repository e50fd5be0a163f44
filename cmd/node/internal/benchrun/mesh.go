package benchrun

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// The mesh bench's fixed shape (issue 4 item 9).
const (
	meshName     = "bench"
	meshChannel  = "echo"
	meshPacket   = "echo"
	meshServer   = "bench-server"
	meshClient   = "bench-client"
	meshInflight = 1000 // pipelined: requests outstanding, both sides
	// meshSendHWM lets the pipelined window fit in one peer queue with room
	// to spare; the default (1000) would turn a full window into ErrBusy.
	meshSendHWM = 4096
)

// Goals from the issue: pipelined 64 B channel requests at least 5× raw
// per-message zmq4; lockstep p99 at most 1.5× raw zmq4.
const (
	goalPipelinedRatio = 5.0
	goalLockstepP99    = 1.5
)

// meshSizes are the payload sizes the bench compares.
var meshSizes = []int{64, 16 << 10}

func init() {
	register(Bench{
		Name:  "mesh",
		About: "two MeshNodes on loopback, channel request/response (lockstep and pipelined) vs raw zmq4 DEALER->ROUTER echo, 64 B and 16 KiB",
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			return runMeshBench(ctx, w, meshPlanFor(quick))
		},
	})
}

// meshPlan is how long each measurement runs.
type meshPlan struct {
	warmup    int           // lockstep round trips before measuring
	lockstep  time.Duration // per side, per size
	pipelined time.Duration // per side, per size
	maxCalls  int64         // cap on one measurement's messages
}

func meshPlanFor(quick bool) meshPlan {
	if quick {
		return meshPlan{warmup: 100, lockstep: 150 * time.Millisecond, pipelined: 250 * time.Millisecond, maxCalls: 1 << 20}
	}
	return meshPlan{warmup: 2000, lockstep: 2 * time.Second, pipelined: 3 * time.Second, maxCalls: 1 << 24}
}

// meshPair is a server MeshNode with an echo Server on channel "echo" and a
// client MeshNode that dialed it and sees it Ready.
type meshPair struct {
	server, client *zlink.Host
	cli            *routemesh.Node
}

// startMeshPair starts both nodes through the public entry point and waits
// (bounded by ctx and 10 s) until the client sees the server Ready.
func startMeshPair(ctx context.Context) (*meshPair, error) {
	sock := routemesh.SocketConfig{SendHWM: meshSendHWM}
	so := zlink.NewOptions()
	so.AddRouteMesh(meshName).SetRoutingID(meshServer).ConfigureRouterSocket(sock).
		Channel(meshChannel).Server().
		HandleRequest(meshPacket, func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	srv, err := zlink.Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("benchrun: start server node: %w", err)
	}
	co := zlink.NewOptions()
	co.AddRouteMesh(meshName).SetRoutingID(meshClient).ConfigureRouterSocket(sock).
		AddPeer(srv.Mesh(meshName).Endpoint(), meshServer).
		Channel(meshChannel).Client()
	cli, err := zlink.Start(ctx, co)
	if err != nil {
		_ = srv.Stop(context.Background())
		return nil, fmt.Errorf("benchrun: start client node: %w", err)
	}
	p := &meshPair{server: srv, client: cli, cli: cli.Mesh(meshName)}
	if err := waitPeerReady(ctx, p.cli, meshServer, 10*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *meshPair) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.client.Stop(ctx)
	_ = p.server.Stop(ctx)
}

var errPeerNotReady = errors.New("benchrun: peer did not become Ready")

// waitPeerReady polls the node's Status until peer rid is Ready.
func waitPeerReady(ctx context.Context, n *routemesh.Node, rid string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var last routemesh.PeerStatus
	for {
		st, err := n.Status(ctx)
		if err == nil {
			if ps, ok := st.Peer(rid); ok {
				last = ps
				if ps.State == routemesh.PeerReady {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s (last state %v, last error %q): %w", errPeerNotReady, rid, last.State, last.LastError, ctx.Err())
		case <-tick.C:
		}
	}
}

// call is one channel request that checks the echo.
func (p *meshPair) call(ctx context.Context, payload []byte) error {
	out, err := p.cli.Call(ctx, meshChannel, meshPacket, payload)
	if err != nil {
		return err
	}
	if len(out) != len(payload) {
		return errEchoMismatch
	}
	return nil
}

// gate says whether to start another message: false once its duration has
// passed or max messages were started. Safe for concurrent use.
type gate struct {
	stop atomic.Bool
	n    atomic.Int64
	max  int64
	t    *time.Timer
}

func newGate(d time.Duration, maxMsgs int64) *gate {
	g := &gate{max: maxMsgs}
	g.t = time.AfterFunc(d, func() { g.stop.Store(true) })
	return g
}

func (g *gate) next() bool { return !g.stop.Load() && g.n.Add(1) <= g.max }

func (g *gate) close() { g.t.Stop() }

// countGate allows exactly n messages (warm-up, Go benchmarks).
func countGate(n int) func() bool {
	var c atomic.Int64
	return func() bool { return c.Add(1) <= int64(n) }
}

// lockstepResult is one lockstep measurement.
type lockstepResult struct {
	n        int
	rate     float64 // round trips per second
	p50, p99 time.Duration
}

func summarize(lat []time.Duration, elapsed time.Duration) lockstepResult {
	r := lockstepResult{n: len(lat)}
	if len(lat) == 0 || elapsed <= 0 {
		return r
	}
	r.rate = float64(len(lat)) / elapsed.Seconds()
	s := slices.Clone(lat)
	slices.Sort(s)
	r.p50 = s[len(s)*50/100]
	r.p99 = s[min(len(s)-1, len(s)*99/100)]
	return r
}

// pipelinedResult is one pipelined measurement.
type pipelinedResult struct {
	n         int
	rate      float64 // messages (round trips) per second
	allocsPer float64 // heap allocations per message, whole process (client and server)
	bytesPer  float64
}

// measurePipelined runs run (which returns the number of round trips) and
// reports its rate and the process's allocations per message.
func measurePipelined(run func() (int, error)) (pipelinedResult, error) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	n, err := run()
	el := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return pipelinedResult{}, err
	}
	r := pipelinedResult{n: n}
	if n > 0 {
		r.rate = float64(n) / el.Seconds()
		r.allocsPer = float64(m1.Mallocs-m0.Mallocs) / float64(n)
		r.bytesPer = float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
	}
	return r, nil
}

// meshLockstep makes one call at a time until next says stop.
func meshLockstep(ctx context.Context, p *meshPair, payload []byte, next func() bool) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, 1<<14)
	for next() {
		t0 := time.Now()
		if err := p.call(ctx, payload); err != nil {
			return lat, fmt.Errorf("benchrun: lockstep call: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// meshPipelined runs inflight goroutines, each calling in a loop while next
// allows, and returns the number of completed calls.
func meshPipelined(ctx context.Context, p *meshPair, payload []byte, inflight int, next func() bool) (int, error) {
	var (
		wg    sync.WaitGroup
		done  atomic.Int64
		first atomic.Pointer[error]
	)
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next() {
				if err := p.call(ctx, payload); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return int(done.Load()), fmt.Errorf("benchrun: pipelined call: %w", *e)
	}
	return int(done.Load()), nil
}

// sizeResult is the side-by-side comparison at one payload size.
type sizeResult struct {
	size                int
	zlinkLock, zmqLock  lockstepResult
	zlinkPipe, zmqPipe  pipelinedResult
	pipeRatio, p99Ratio float64
}

// runMeshBench starts both pairs once and measures every size on them.
func runMeshBench(ctx context.Context, w io.Writer, plan meshPlan) error {
	pair, err := startMeshPair(ctx)
	if err != nil {
		return err
	}
	defer pair.stop()
	zq, err := startZMQEcho(ctx)
	if err != nil {
		return err
	}
	defer zq.close()
	fmt.Fprintf(w, "setup: loopback, pipelined window %d in flight on both sides, GOMAXPROCS=%d, lockstep %v and pipelined %v per side per size\n",
		meshInflight, runtime.GOMAXPROCS(0), plan.lockstep, plan.pipelined)
	for _, size := range meshSizes {
		r, err := measureSize(ctx, pair, zq, size, plan)
		if err != nil {
			return fmt.Errorf("size %d: %w", size, err)
		}
		writeSize(w, r)
	}
	return nil
}

func measureSize(ctx context.Context, pair *meshPair, zq *zmqEcho, size int, plan meshPlan) (sizeResult, error) {
	r := sizeResult{size: size}
	payload := make([]byte, size)
	_, _ = rand.Read(payload)

	// Warm both paths (connections, pools, batch buffers) at this size.
	if _, err := meshLockstep(ctx, pair, payload, countGate(plan.warmup)); err != nil {
		return r, err
	}
	if _, err := zmqLockstep(zq, payload, countGate(plan.warmup)); err != nil {
		return r, err
	}

	lock := func(f func(next func() bool) ([]time.Duration, error)) (lockstepResult, error) {
		g := newGate(plan.lockstep, plan.maxCalls)
		defer g.close()
		t0 := time.Now()
		lat, err := f(g.next)
		return summarize(lat, time.Since(t0)), err
	}
	var err error
	if r.zmqLock, err = lock(func(next func() bool) ([]time.Duration, error) { return zmqLockstep(zq, payload, next) }); err != nil {
		return r, err
	}
	if r.zlinkLock, err = lock(func(next func() bool) ([]time.Duration, error) { return meshLockstep(ctx, pair, payload, next) }); err != nil {
		return r, err
	}
	pipe := func(f func(next func() bool) (int, error)) (pipelinedResult, error) {
		g := newGate(plan.pipelined, plan.maxCalls)
		defer g.close()
		return measurePipelined(func() (int, error) { return f(g.next) })
	}
	if r.zmqPipe, err = pipe(func(next func() bool) (int, error) { return zq.pipeline(payload, meshInflight, next) }); err != nil {
		return r, err
	}
	if r.zlinkPipe, err = pipe(func(next func() bool) (int, error) {
		return meshPipelined(ctx, pair, payload, meshInflight, next)
	}); err != nil {
		return r, err
	}
	if r.zmqPipe.rate > 0 {
		r.pipeRatio = r.zlinkPipe.rate / r.zmqPipe.rate
	}
	if r.zmqLock.p99 > 0 {
		r.p99Ratio = float64(r.zlinkLock.p99) / float64(r.zmqLock.p99)
	}
	return r, nil
}

func sizeLabel(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

func writeSize(w io.Writer, r sizeResult) {
	l := sizeLabel(r.size)
	line := func(side string, x lockstepResult) {
		fmt.Fprintf(w, "size=%-6s lockstep  %-6s %9.0f rt/s   p50 %8v  p99 %8v  (n=%d)\n",
			l, side, x.rate, x.p50.Round(time.Microsecond), x.p99.Round(time.Microsecond), x.n)
	}
	line("zlink", r.zlinkLock)
	line("zmq4", r.zmqLock)
	pline := func(side string, x pipelinedResult) {
		fmt.Fprintf(w, "size=%-6s pipelined %-6s %9.0f msgs/s  %6.1f allocs/msg  %8.0f B/msg  (n=%d, %d in flight)\n",
			l, side, x.rate, x.allocsPer, x.bytesPer, x.n, meshInflight)
	}
	pline("zlink", r.zlinkPipe)
	pline("zmq4", r.zmqPipe)
	if r.size == 64 {
		fmt.Fprintf(w, "ratio size=%s pipelined zlink/zmq4 = %.2fx (goal >= %.0fx): %s\n",
			l, r.pipeRatio, goalPipelinedRatio, verdict(r.pipeRatio >= goalPipelinedRatio))
	} else {
		fmt.Fprintf(w, "ratio size=%s pipelined zlink/zmq4 = %.2fx (no goal at this size)\n", l, r.pipeRatio)
	}
	fmt.Fprintf(w, "ratio size=%s lockstep p99 zlink/zmq4 = %.2fx (goal <= %.1fx): %s\n",
		l, r.p99Ratio, goalLockstepP99, verdict(r.p99Ratio > 0 && r.p99Ratio <= goalLockstepP99))
}
