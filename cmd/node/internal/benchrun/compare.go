package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
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
var cmpImplOrder = []string{"zlink", "protoactor", "zmq4", "tcp"}

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
	c, err := cmpImpls[name].dial(ctx, r.servers[name].endpoint, cmpDialOpts{log: r.libLog})
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

// cmpPayload is size pseudo-random bytes (the same for every
// implementation of a scenario).
func cmpPayload(size int) []byte {
	p := make([]byte, size)
	x := uint32(2463534242)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}

// measure runs one timed run of implementation name. A failed or stalled
// run is recorded with its error (and the client is dialed again for the
// next run), not returned: the other implementations keep running.
func (r *cmpRunner) measure(ctx context.Context, name string, sc cmpScenario, payload []byte, dur time.Duration, round int) CmpRun {
	run := CmpRun{Round: round + 1, Impl: name}
	fail := func(err error) CmpRun {
		run.Error = cmpOneLineErr(err)
		if e := r.redial(ctx, name); e != nil {
			run.Error += "; redial: " + cmpOneLineErr(e)
		}
		return run
	}
	c := r.clients[name]
	if c == nil {
		if err := r.redial(ctx, name); err != nil {
			run.Error = cmpOneLineErr(err)
			return run
		}
		c = r.clients[name]
	}
	srv := r.servers[name]
	runtime.GC() // the previous run's garbage is not this run's CPU
	s0, err := srv.cpu()
	if err != nil {
		run.Error = cmpOneLineErr(err)
		return run
	}
	c0 := cmpProcessCPU()
	g := newGate(dur, 1<<26)
	defer g.close()
	var last atomic.Int64
	var started atomic.Int64
	last.Store(time.Now().UnixNano())
	next := func() bool {
		last.Store(time.Now().UnixNano())
		if g.next() {
			started.Add(1)
			return true
		}
		return false
	}
	type outcome struct {
		lat []time.Duration
		n   int
		err error
	}
	done := make(chan outcome, 1)
	t0 := time.Now()
	go func() {
		var o outcome
		if sc.lockstep() {
			o.lat, o.err = c.lockstep(payload, next)
			o.n = len(o.lat)
		} else {
			o.n, o.err = c.pipelined(payload, sc.window, next)
		}
		done <- o
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var out outcome
wait:
	for {
		select {
		case out = <-done:
			break wait
		case <-tick.C:
			if idle := time.Since(time.Unix(0, last.Load())); idle > cmpStall {
				c.close()
				delete(r.clients, name)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
				}
				return fail(fmt.Errorf("stalled: nothing for %v after %d requests started%s", idle.Round(time.Second), started.Load(), r.libLogNote()))
			}
		}
	}
	el := time.Since(t0)
	c1 := cmpProcessCPU()
	s1, serr := srv.cpu()
	if out.err != nil {
		return fail(fmt.Errorf("after %d round trips: %w%s", out.n, out.err, r.libLogNote()))
	}
	if serr != nil {
		run.Error = cmpOneLineErr(serr)
		return run
	}
	run.N = out.n
	run.Seconds = el.Seconds()
	if out.n > 0 {
		run.Rate = float64(out.n) / el.Seconds()
		run.ClientCPUus = float64((c1 - c0).Microseconds()) / float64(out.n)
		run.ServerCPUus = float64((s1 - s0).Microseconds()) / float64(out.n)
	}
	if sc.lockstep() {
		ls := summarize(out.lat, el)
		run.P50us = float64(ls.p50.Nanoseconds()) / 1e3
		run.P99us = float64(ls.p99.Nanoseconds()) / 1e3
	}
	return run
}

// libLogNote is the client libraries' last warnings, for an error.
func (r *cmpRunner) libLogNote() string {
	s := strings.TrimSpace(r.libLog.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return "; client library log: " + strings.Join(lines, " | ")
}

// protoDefaultLimits runs Proto.Actor's 16 KiB pipelined scenario once
// with gRPC's default message limits, on a server process of its own.
func (r *cmpRunner) protoDefaultLimits(ctx context.Context) string {
	const name = "protoactor"
	sc := cmpScenario{name: "16KiB-pipelined", size: 16 << 10, window: cmpWindow}
	p, err := cmpStartServer(ctx, r.o.launcher, name, "--default-limits")
	if err != nil {
		return "Proto.Actor with gRPC's default limits: could not start its server: " + cmpOneLineErr(err)
	}
	r.libLog.reset()
	c, err := cmpDialProto(ctx, p.endpoint, cmpDialOpts{defaultLimits: true, log: r.libLog})
	if err != nil {
		p.stop()
		return "Proto.Actor with gRPC's default limits: could not start its client: " + cmpOneLineErr(err)
	}
	saved, savedC := r.servers[name], r.clients[name]
	r.servers[name], r.clients[name] = p, c
	run := r.measure(ctx, name, sc, cmpPayload(sc.size), r.o.Pipelined, 0)
	if c := r.clients[name]; c != nil {
		c.close()
	}
	p.stop()
	r.servers[name], r.clients[name] = saved, savedC
	if run.Error != "" {
		return fmt.Sprintf("Proto.Actor with gRPC's default 4 MiB message limit, 16 KiB pipelined (%d in flight): FAILS: %s. "+
			"The scenarios above raise the limit to %d MiB (grpc.MaxRecvMsgSize on both processes' servers).", cmpWindow, run.Error, cmpProtoMaxMsg>>20)
	}
	return fmt.Sprintf("Proto.Actor with gRPC's default 4 MiB message limit, 16 KiB pipelined (%d in flight): works (%.0f msgs/s in one run).", cmpWindow, run.Rate)
}

// profile runs one more (unrecorded) run of name with both processes
// profiled, and returns the top entries of each profile.
func (r *cmpRunner) profile(ctx context.Context, name string, sc cmpScenario, payload []byte, dur time.Duration) ([]CmpProfile, error) {
	if err := os.MkdirAll(r.o.ProfileDir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(r.o.ProfileDir, sc.name+"-"+name)
	srv := r.servers[name]
	if _, err := srv.request("profile " + base + "-server"); err != nil {
		return nil, err
	}
	cp, err := cmpStartProfile(base + "-client")
	if err != nil {
		_, _ = srv.request("profile-stop")
		return nil, err
	}
	run := r.measure(ctx, name, sc, payload, dur, -1)
	cerr := cp.stop()
	_, serr := srv.request("profile-stop")
	if err := errors.Join(cerr, serr); err != nil {
		return nil, err
	}
	if run.Error != "" {
		fmt.Fprintf(r.w, "compare profile scenario=%s impl=%s: the profiled run failed: %s\n", sc.name, name, run.Error)
	}
	var out []CmpProfile
	for _, proc := range []string{"client", "server"} {
		prefix := base + "-" + proc
		if p, err := cmpTopOfProfile(prefix+".cpu.pprof", "", "cpu", 12); err == nil {
			p.Scenario, p.Impl, p.Process, p.RoundTrips = sc.name, name, proc, run.N
			out = append(out, p)
		} else {
			fmt.Fprintf(r.w, "compare profile %s: %v\n", prefix, err)
		}
		if p, err := cmpTopOfProfile(prefix+".allocs.pprof", prefix+".allocs-base.pprof", "alloc_space", 8); err == nil {
			p.TopCum = nil // allocation sites: the flat list says it
			p.Scenario, p.Impl, p.Process, p.RoundTrips = sc.name, name, proc, run.N
			out = append(out, p)
		} else {
			fmt.Fprintf(r.w, "compare profile %s: %v\n", prefix, err)
		}
	}
	fmt.Fprintf(r.w, "compare profile scenario=%s impl=%s saved %s-{client,server}.{cpu,allocs,allocs-base}.pprof\n", sc.name, name, base)
	return out, nil
}

// save writes the JSON, the markdown region and the charts asked for.
func (r *cmpRunner) save() error {
	var errs []error
	if r.o.JSONPath != "" {
		errs = append(errs, cmpWriteJSON(r.o.JSONPath, r.res))
		fmt.Fprintf(r.w, "compare wrote %s\n", r.o.JSONPath)
	}
	if r.o.DocsPath != "" || r.o.ImgDir != "" {
		errs = append(errs, WriteCompareReport(r.res, r.o.DocsPath, r.o.ImgDir, r.o.JSONPath))
		fmt.Fprintf(r.w, "compare wrote report docs=%q img=%q\n", r.o.DocsPath, r.o.ImgDir)
	}
	return errors.Join(errs...)
}

// line is a run's output line.
func (run CmpRun) line(sc cmpScenario) string {
	if run.Error != "" {
		return fmt.Sprintf("compare run scenario=%s round=%d impl=%s FAILED: %s", sc.name, run.Round, run.Impl, run.Error)
	}
	s := fmt.Sprintf("compare run scenario=%s round=%d impl=%-10s %9.0f rt/s", sc.name, run.Round, run.Impl, run.Rate)
	if sc.lockstep() {
		s += fmt.Sprintf("  p50 %7.1fµs  p99 %7.1fµs", run.P50us, run.P99us)
	}
	return s + fmt.Sprintf("  cpu/rt client %6.2fµs server %6.2fµs  (n=%d)", run.ClientCPUus, run.ServerCPUus, run.N)
}

func cmpWriteScenarioSummary(w io.Writer, s CmpScenario) {
	for _, im := range s.Impls {
		line := fmt.Sprintf("compare summary scenario=%s impl=%-10s rate %s rt/s", s.Name, im.Impl, im.Rate.format("%.0f"))
		if s.Mode == "lockstep" {
			line += fmt.Sprintf("  p50 %sµs  p99 %sµs", im.P50us.format("%.1f"), im.P99us.format("%.1f"))
		}
		line += fmt.Sprintf("  cpu/rt %sµs", im.CPUus.format("%.2f"))
		if im.Impl != "zlink" {
			line += fmt.Sprintf("  zlink/%s rate %s", im.Impl, im.VsZlink.Rate.format("%.2fx"))
			if s.Mode == "lockstep" {
				line += fmt.Sprintf(" p50 %s p99 %s", im.VsZlink.P50.format("%.2fx"), im.VsZlink.P99.format("%.2fx"))
			}
			line += fmt.Sprintf(" cpu %s", im.VsZlink.CPU.format("%.2fx"))
		}
		if im.Failed > 0 {
			line += fmt.Sprintf("  FAILED runs=%d", im.Failed)
		}
		fmt.Fprintln(w, line)
	}
}

// format prints "median (min–max)", or "n/a".
func (s CmpStat) format(f string) string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", s.Median, s.Min, s.Max)
}

// cmpSummarizeScenario computes each implementation's statistics and its
// pair-by-pair ratios to ZLink (same round).
func cmpSummarizeScenario(runs []CmpRun, impls []string) []CmpImplSummary {
	byRound := map[int]map[string]CmpRun{}
	for _, run := range runs {
		if byRound[run.Round] == nil {
			byRound[run.Round] = map[string]CmpRun{}
		}
		byRound[run.Round][run.Impl] = run
	}
	val := func(run CmpRun, f func(CmpRun) float64) float64 {
		if run.Error != "" || run.N == 0 {
			return math.NaN()
		}
		return f(run)
	}
	rate := func(r CmpRun) float64 { return r.Rate }
	p50 := func(r CmpRun) float64 { return r.P50us }
	p99 := func(r CmpRun) float64 { return r.P99us }
	ccpu := func(r CmpRun) float64 { return r.ClientCPUus }
	scpu := func(r CmpRun) float64 { return r.ServerCPUus }
	cpu := func(r CmpRun) float64 { return r.ClientCPUus + r.ServerCPUus }
	out := make([]CmpImplSummary, 0, len(impls))
	for _, name := range impls {
		var rs, l50, l99, cc, sc, tc, rr, r50, r99, rc []float64
		s := CmpImplSummary{Impl: name}
		for _, run := range runs {
			if run.Impl != name {
				continue
			}
			if run.Error != "" {
				s.Failed++
				if len(s.Errors) < 3 {
					s.Errors = append(s.Errors, fmt.Sprintf("round %d: %s", run.Round, run.Error))
				}
			}
			rs = append(rs, val(run, rate))
			if run.P50us > 0 {
				l50 = append(l50, val(run, p50))
				l99 = append(l99, val(run, p99))
			}
			cc = append(cc, val(run, ccpu))
			sc = append(sc, val(run, scpu))
			tc = append(tc, val(run, cpu))
			z, ok := byRound[run.Round]["zlink"]
			if !ok || name == "zlink" {
				continue
			}
			rr = append(rr, cmpRatio(val(z, rate), val(run, rate)))
			if run.P50us > 0 {
				r50 = append(r50, cmpRatio(val(z, p50), val(run, p50)))
				r99 = append(r99, cmpRatio(val(z, p99), val(run, p99)))
			}
			rc = append(rc, cmpRatio(val(z, cpu), val(run, cpu)))
		}
		s.Rate, s.P50us, s.P99us = cmpStatOf(rs), cmpStatOf(l50), cmpStatOf(l99)
		s.ClientCPUus, s.ServerCPUus, s.CPUus = cmpStatOf(cc), cmpStatOf(sc), cmpStatOf(tc)
		s.VsZlink = CmpRatios{Rate: cmpStatOf(rr), P50: cmpStatOf(r50), P99: cmpStatOf(r99), CPU: cmpStatOf(rc)}
		out = append(out, s)
	}
	return out
}
