package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// `zlink-node bench compare`: ZLink against Proto.Actor Go remote, raw
// zmq4 and raw TCP, each server in a process of its own (the bench
// re-executes its own binary), the clients in the bench process. Same
// payloads, same window, rounds alternating the implementations; per
// scenario the median and range over the rounds and the ratio to ZLink
// of the same round. See docs/benchmarks.md.

// cmpImpl is one implementation: its server (run in the child process)
// and its client (in the bench process).
type cmpImpl struct {
	name, label, about string
	serve              func(ctx context.Context, f cmpServerFlags) (endpoint string, stop func(), err error)
	dial               func(ctx context.Context, endpoint string, o cmpDialOpts) (cmpClient, error)
}

type cmpDialOpts struct {
	defaultLimits bool      // protoactor: gRPC's default message limits
	log           io.Writer // where the client library logs (warnings)
	tlsDir        string    // zlink-tls: the directory of cmpWriteTLSFiles
	redis         string    // zlink-spot: the Location Store's redis-server
}

// cmpClient runs one measurement at a time. next is called before every
// request and says whether to start another; both return once every
// started request ended. close makes a running measurement return.
type cmpClient interface {
	lockstep(payload []byte, next func() bool) ([]time.Duration, error)
	pipelined(payload []byte, window int, next func() bool) (int, error)
	close()
}

// cmpImpls is filled by the init of each compare_<impl>.go file.
var cmpImpls = map[string]cmpImpl{}

// cmpImplOrder is the order of the implementations in a round and in the
// report; ZLink first (every ratio is against it).
var cmpImplOrder = []string{"zlink", "protoactor", "zmq4", "tcp", "zlink-tls", "zlink-gpc"}

var errCmpClosed = errors.New("benchrun: compare: client closed")

const (
	cmpWindow = 1000 // pipelined: requests in flight, every implementation
	// cmpStall is how long a run may go without starting a request (or,
	// after its time is up, without finishing) before it counts as stalled.
	cmpStall = 5 * time.Second
)

// cmpScenario is one payload size and mode.
type cmpScenario struct {
	name   string
	size   int
	window int // 1 = lockstep
}

func (s cmpScenario) lockstep() bool { return s.window == 1 }

func (s cmpScenario) mode() string {
	if s.lockstep() {
		return "lockstep"
	}
	return "pipelined"
}

var cmpScenarios = []cmpScenario{
	{name: "64B-lockstep", size: 64, window: 1},
	{name: "64B-pipelined", size: 64, window: cmpWindow},
	{name: "16KiB-lockstep", size: 16 << 10, window: 1},
	{name: "16KiB-pipelined", size: 16 << 10, window: cmpWindow},
}

// CompareOptions configures RunCompare.
type CompareOptions struct {
	Quick      bool
	Rounds     int           // rounds per scenario (each runs every implementation once); 0 = 7 (quick: 2)
	Lockstep   time.Duration // one lockstep run; 0 = 1s (quick: 150ms)
	Pipelined  time.Duration // one pipelined run; 0 = 1.5s (quick: 250ms)
	Scenarios  []string      // scenario names; empty = all
	Impls      []string      // implementations; empty = all (zlink is always run)
	Extras     bool          // also the multicast and failover parts
	JSONPath   string        // write the results as JSON here ("" = do not)
	DocsPath   string        // regenerate the marked region of this markdown file ("" = do not)
	ImgDir     string        // write one SVG chart per scenario here ("" = do not)
	ProfileDir string        // save CPU and allocation profiles of every process here ("" = do not)
	// DefaultLimitsProbe also runs Proto.Actor's 16 KiB pipelined scenario
	// once with gRPC's default message limits, to report whether it works.
	DefaultLimitsProbe bool
	// Spots runs the virtual-actor comparison instead: a ZLink Spot
	// (zlink-spot) against a Proto.Actor cluster grain (protoactor-grain),
	// with a redis-server as ZLink's Location Store; Impls, Extras and
	// DefaultLimitsProbe do not apply, and DocsPath's region is the
	// spots-compare one (compare_grain_report.go).
	Spots bool
	// launcher starts the server processes; zero = this binary's
	// `bench compare-server` (tests set their own).
	launcher cmpLauncher
}

func (o *CompareOptions) defaults() {
	if o.Rounds <= 0 {
		o.Rounds = 7
		if o.Quick {
			o.Rounds = 2
		}
	}
	if o.Lockstep <= 0 {
		o.Lockstep = time.Second
		if o.Quick {
			o.Lockstep = 150 * time.Millisecond
		}
	}
	if o.Pipelined <= 0 {
		o.Pipelined = 1500 * time.Millisecond
		if o.Quick {
			o.Pipelined = 250 * time.Millisecond
		}
	}
}

func init() {
	register(Bench{
		Name:     "compare",
		About:    "ZLink vs Proto.Actor remote, raw zmq4 and raw TCP, every server in its own process (run it by name; `bench compare --help` for its flags)",
		Explicit: true,
		Run: func(ctx context.Context, w io.Writer, quick bool) error {
			_, err := RunCompare(ctx, w, CompareOptions{Quick: quick, Extras: !quick, DefaultLimitsProbe: !quick})
			return err
		},
	})
}

// cmpRunner holds the server processes and clients of one bench run.
type cmpRunner struct {
	o       CompareOptions
	w       io.Writer
	impls   []string
	servers map[string]*cmpServerProc
	clients map[string]cmpClient
	libLog  *cmpTailBuffer
	res     *CompareResult
	tlsDir  string // the mesh's TLS files when zlink-tls runs
	redis   string // the Location Store's redis-server when zlink-spot runs
}

// RunCompare runs the comparison, prints its lines to w and returns the
// results (also written as JSON, markdown and SVG when the options ask).
func RunCompare(ctx context.Context, w io.Writer, o CompareOptions) (*CompareResult, error) {
	o.defaults()
	if len(o.launcher.argv) == 0 {
		l, err := cmpDefaultLauncher()
		if err != nil {
			return nil, err
		}
		o.launcher = l
	}
	impls, err := cmpPickImpls(o.Impls)
	if o.Spots {
		impls, err = cmpPickSpotImpls(o.Impls)
		o.Extras, o.DefaultLimitsProbe = false, false
	}
	if err != nil {
		return nil, err
	}
	scens, err := cmpPickScenarios(o.Scenarios)
	if err != nil {
		return nil, err
	}
	r := &cmpRunner{o: o, w: w, impls: impls, servers: map[string]*cmpServerProc{}, clients: map[string]cmpClient{},
		libLog: &cmpTailBuffer{max: 16 << 10}}
	r.res = cmpNewResult(o, impls)
	defer r.closeAll()
	if slices.Contains(impls, "zlink-tls") {
		dir, err := os.MkdirTemp("", "zlink-compare-tls-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := cmpWriteTLSFiles(dir); err != nil {
			return nil, err
		}
		r.tlsDir = dir
	}
	if slices.Contains(impls, "zlink-spot") {
		addr, stop, err := startScaleRedis()
		if err != nil {
			return nil, fmt.Errorf("benchrun: compare: %w", err)
		}
		defer stop()
		r.redis = addr
		fmt.Fprintf(w, "compare store: redis-server %s (ZLink's Location Store)\n", addr)
	}
	fmt.Fprintf(w, "compare setup: %s; rounds=%d lockstep=%v pipelined=%v window=%d; order per round alternates (A B C D, then D C B A)\n",
		r.res.Machine.String(), o.Rounds, o.Lockstep, o.Pipelined, cmpWindow)
	for _, name := range impls {
		if err := r.start(ctx, name); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "compare server impl=%s pid=%d endpoint=%s (%s)\n", name, r.servers[name].cmd.Process.Pid, r.servers[name].endpoint, cmpImpls[name].about)
	}
	for _, sc := range scens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := r.scenario(ctx, sc)
		if err != nil {
			return nil, err
		}
		r.res.Scenarios = append(r.res.Scenarios, res)
		cmpWriteScenarioSummary(w, res)
	}
	if o.DefaultLimitsProbe && slices.Contains(impls, "protoactor") {
		r.res.Notes = append(r.res.Notes, r.protoDefaultLimits(ctx))
		fmt.Fprintf(w, "compare note: %s\n", r.res.Notes[len(r.res.Notes)-1])
	}
	if o.Extras {
		r.closeAll() // the extra parts start their own processes
		if err := r.extras(ctx); err != nil {
			return nil, err
		}
	}
	r.res.Goals = cmpEvaluateGoals(r.res)
	if o.Spots {
		r.res.Goals = cmpEvaluateSpotGoals(r.res)
	}
	for _, g := range r.res.Goals {
		fmt.Fprintf(w, "goal %s\n", g.Line())
	}
	return r.res, r.save()
}

func cmpPickImpls(want []string) ([]string, error) {
	if len(want) == 0 {
		return slices.Clone(cmpImplOrder), nil
	}
	out := []string{"zlink"}
	for _, n := range want {
		if _, ok := cmpImpls[n]; !ok {
			return nil, fmt.Errorf("benchrun: compare: unknown implementation %q (have %s)", n, strings.Join(cmpImplOrder, ", "))
		}
	}
	for _, n := range cmpImplOrder[1:] {
		if slices.Contains(want, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func cmpPickScenarios(want []string) ([]cmpScenario, error) {
	if len(want) == 0 {
		return cmpScenarios, nil
	}
	var out []cmpScenario
	for _, sc := range cmpScenarios {
		if slices.Contains(want, sc.name) {
			out = append(out, sc)
		}
	}
	if len(out) != len(want) {
		names := make([]string, len(cmpScenarios))
		for i, s := range cmpScenarios {
			names[i] = s.name
		}
		return nil, fmt.Errorf("benchrun: compare: unknown scenario in %v (have %s)", want, strings.Join(names, ", "))
	}
	return out, nil
}

// start starts an implementation's server process and dials it.
func (r *cmpRunner) start(ctx context.Context, name string, extra ...string) error {
	if name == "zlink-tls" {
		extra = append(extra, "--tls-dir", r.tlsDir)
	}
	if name == "zlink-spot" {
		extra = append(extra, "--redis", r.redis)
	}
	p, err := cmpStartServer(ctx, r.o.launcher, name, extra...)
	if err != nil {
		return err
	}
	r.servers[name] = p
	return r.redial(ctx, name)
}

func (r *cmpRunner) redial(ctx context.Context, name string) error {
	if c := r.clients[name]; c != nil {
		c.close()
		delete(r.clients, name)
	}
	c, err := cmpImpls[name].dial(ctx, r.servers[name].endpoint, cmpDialOpts{log: r.libLog, tlsDir: r.tlsDir, redis: r.redis})
	if err != nil {
		return err
	}
	r.clients[name] = c
	return nil
}

func (r *cmpRunner) closeAll() {
	for n, c := range r.clients {
		c.close()
		delete(r.clients, n)
	}
	for n, p := range r.servers {
		p.stop()
		delete(r.servers, n)
	}
}

// scenario warms every implementation up, then runs the rounds.
func (r *cmpRunner) scenario(ctx context.Context, sc cmpScenario) (CmpScenario, error) {
	res := CmpScenario{Name: sc.name, Mode: sc.mode(), Size: sc.size, Window: sc.window}
	payload := cmpPayload(sc.size)
	dur := r.o.Pipelined
	if sc.lockstep() {
		dur = r.o.Lockstep
	}
	for _, name := range r.impls {
		if run := r.measure(ctx, name, sc, payload, min(dur/3, 300*time.Millisecond), -1); run.Error != "" {
			fmt.Fprintf(r.w, "compare warmup scenario=%s impl=%s: %s\n", sc.name, name, run.Error)
		}
	}
	for round := range r.o.Rounds {
		order := slices.Clone(r.impls)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, name := range order {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			run := r.measure(ctx, name, sc, payload, dur, round)
			res.Runs = append(res.Runs, run)
			fmt.Fprintln(r.w, run.line(sc))
		}
	}
	res.Impls = cmpSummarizeScenario(res.Runs, r.impls)
	if r.o.ProfileDir != "" {
		for _, name := range r.impls {
			ps, err := r.profile(ctx, name, sc, payload, dur)
			if err != nil {
				fmt.Fprintf(r.w, "compare profile scenario=%s impl=%s: %v\n", sc.name, name, err)
				continue
			}
			r.res.Profiles = append(r.res.Profiles, ps...)
		}
	}
	return res, nil
}
