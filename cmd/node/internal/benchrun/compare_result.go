package benchrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// CompareResult is everything one `bench compare` run measured; the JSON
// file, the markdown tables and the charts are all made from it.
type CompareResult struct {
	Date         string        `json:"date"`
	Machine      CmpMachine    `json:"machine"`
	Quick        bool          `json:"quick"`
	Spots        bool          `json:"spots,omitempty"` // bench compare --spots: ZLink Spot vs Proto.Actor grain
	Rounds       int           `json:"rounds"`
	LockstepSec  float64       `json:"lockstep_seconds"`
	PipelinedSec float64       `json:"pipelined_seconds"`
	Window       int           `json:"window"`
	Impls        []CmpImplInfo `json:"impls"`
	Scenarios    []CmpScenario `json:"scenarios"`
	Goals        []CmpGoal     `json:"goals"`
	Notes        []string      `json:"notes,omitempty"`
	Multicast    *CmpMulticast `json:"multicast,omitempty"`
	Failover     *CmpFailover  `json:"failover,omitempty"`
	Profiles     []CmpProfile  `json:"profiles,omitempty"`
	ProfileDir   string        `json:"profile_dir,omitempty"`
}

// CmpMachine describes where the run happened.
type CmpMachine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	OSArch     string `json:"os_arch"`
}

func (m CmpMachine) String() string {
	return fmt.Sprintf("%d CPUs (%s), kernel %s, %s %s, GOMAXPROCS=%d in every process, loopback",
		m.CPUs, m.CPUModel, m.Kernel, m.Go, m.OSArch, m.GOMAXPROCS)
}

// CmpImplInfo names an implementation in the report.
type CmpImplInfo struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	About string `json:"about"`
}

// CmpScenario is one payload size and mode: every run and the summaries.
type CmpScenario struct {
	Name   string           `json:"name"`
	Mode   string           `json:"mode"`
	Size   int              `json:"size"`
	Window int              `json:"window"`
	Runs   []CmpRun         `json:"runs"`
	Impls  []CmpImplSummary `json:"impls"`
}

// CmpRun is one timed run of one implementation.
type CmpRun struct {
	Round       int     `json:"round"`
	Impl        string  `json:"impl"`
	N           int     `json:"n"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"rate"`
	P50us       float64 `json:"p50_us,omitempty"`
	P99us       float64 `json:"p99_us,omitempty"`
	ClientCPUus float64 `json:"client_cpu_us_per_rt"`
	ServerCPUus float64 `json:"server_cpu_us_per_rt"`
	Error       string  `json:"error,omitempty"`
}

// CmpImplSummary is one implementation over the rounds of a scenario.
type CmpImplSummary struct {
	Impl        string    `json:"impl"`
	Rate        CmpStat   `json:"rate"`
	P50us       CmpStat   `json:"p50_us"`
	P99us       CmpStat   `json:"p99_us"`
	ClientCPUus CmpStat   `json:"client_cpu_us_per_rt"`
	ServerCPUus CmpStat   `json:"server_cpu_us_per_rt"`
	CPUus       CmpStat   `json:"cpu_us_per_rt"`
	VsZlink     CmpRatios `json:"zlink_over_impl"`
	Failed      int       `json:"failed_runs"`
	Errors      []string  `json:"errors,omitempty"`
}

// CmpRatios are ZLink's value divided by this implementation's, round by
// round (rate: above 1 is ZLink faster; latency and CPU: below 1 is ZLink
// better).
type CmpRatios struct {
	Rate CmpStat `json:"rate"`
	P50  CmpStat `json:"p50"`
	P99  CmpStat `json:"p99"`
	CPU  CmpStat `json:"cpu"`
}

// CmpGoal is one goal of the issue, evaluated on this run.
type CmpGoal struct {
	ID       string  `json:"id"`
	Text     string  `json:"text"`
	Scenario string  `json:"scenario"`
	Value    float64 `json:"value"`
	Range    string  `json:"range,omitempty"`
	Target   string  `json:"target"`
	Met      bool    `json:"met"`
	Detail   string  `json:"detail,omitempty"`
}

// Line is the goal's output line.
func (g CmpGoal) Line() string {
	v := "MISSED"
	if g.Met {
		v = "met"
	}
	s := g.ID + ": " + g.Text + ": "
	if g.Range != "" {
		s += fmt.Sprintf("%.2fx (rounds %s) ", g.Value, g.Range)
	}
	s += "(target " + g.Target + ")"
	if g.Detail != "" {
		s += "; " + g.Detail
	}
	return s + ": " + v
}

// CmpProfile is the top of one saved profile.
type CmpProfile struct {
	Scenario string  `json:"scenario"`
	Impl     string  `json:"impl"`
	Process  string  `json:"process"`
	Kind     string  `json:"kind"` // cpu or alloc_space
	File     string  `json:"file"`
	Total    float64 `json:"total"`
	Unit     string  `json:"unit"`
	// RoundTrips is the number of round trips of the profiled run.
	RoundTrips int           `json:"round_trips"`
	Top        []CmpTopEntry `json:"top"`
	// TopCum is the functions with the most cumulative value, the Go
	// runtime's own (runtime.*, internal/*) left out.
	TopCum []CmpTopEntry `json:"top_cum,omitempty"`
}

// CmpTopEntry is one function of a profile's top list.
type CmpTopEntry struct {
	Func    string  `json:"func"`
	Flat    float64 `json:"flat"`
	FlatPct float64 `json:"flat_pct"`
	Cum     float64 `json:"cum"`
	CumPct  float64 `json:"cum_pct"`
}

func cmpNewResult(o CompareOptions, impls []string) *CompareResult {
	r := &CompareResult{
		Date:         time.Now().Format(time.RFC3339),
		Machine:      cmpMachineInfo(),
		Quick:        o.Quick,
		Spots:        o.Spots,
		Rounds:       o.Rounds,
		LockstepSec:  o.Lockstep.Seconds(),
		PipelinedSec: o.Pipelined.Seconds(),
		Window:       cmpWindow,
		ProfileDir:   o.ProfileDir,
	}
	for _, n := range impls {
		im := cmpImpls[n]
		r.Impls = append(r.Impls, CmpImplInfo{Name: n, Label: im.label, About: im.about})
	}
	return r
}

func cmpMachineInfo() CmpMachine {
	m := CmpMachine{CPUs: runtime.NumCPU(), Go: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OSArch: runtime.GOOS + "/" + runtime.GOARCH, CPUModel: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func cmpWriteJSON(path string, r *CompareResult) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadCompareJSON reads a results file written by `bench compare`.
func ReadCompareJSON(path string) (*CompareResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r CompareResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

func (r *CompareResult) scenario(name string) *CmpScenario {
	for i := range r.Scenarios {
		if r.Scenarios[i].Name == name {
			return &r.Scenarios[i]
		}
	}
	return nil
}

func (s *CmpScenario) impl(name string) *CmpImplSummary {
	for i := range s.Impls {
		if s.Impls[i].Impl == name {
			return &s.Impls[i]
		}
	}
	return nil
}

func (r *CompareResult) label(impl string) string {
	for _, im := range r.Impls {
		if im.Name == impl {
			return im.Label
		}
	}
	return impl
}

// Goals of the issue ("Two-process speed", item 3).
const (
	goalCmpPipeVsProto = 1.5  // pipelined 64 B rate >= 1.5x Proto.Actor remote
	goalCmpPipeVsTCP   = 0.35 // pipelined 64 B rate >= 35% of raw TCP (issue 26, item 4)
	goalCmpGPCVsProto  = 1.2  // goroutine per call, pipelined 64 B rate >= 1.2x Proto.Actor's pipelined
	goalCmpCPUVsProto  = 0.6  // CPU per round trip (both processes) <= 0.6x Proto.Actor's
	goalCmpP50VsProto  = 0.6  // lockstep p50 <= 0.6x Proto.Actor's
	goalCmpP99VsZMQ    = 1.5  // lockstep p99 <= 1.5x raw zmq4
)

// cmpRatioGoal is one goal on the ratio pick(ZLink ÷ impl) in scenario
// scen; false when the scenario or the implementation did not run.
func cmpRatioGoal(r *CompareResult, id, text, scen, impl string, pick func(CmpRatios) CmpStat, atLeast bool, target float64) (CmpGoal, bool) {
	sc := r.scenario(scen)
	if sc == nil {
		return CmpGoal{}, false
	}
	im := sc.impl(impl)
	if im == nil {
		return CmpGoal{}, false
	}
	st := pick(im.VsZlink)
	g := CmpGoal{ID: id, Text: text, Scenario: scen, Value: st.Median}
	if atLeast {
		g.Target = fmt.Sprintf(">= %.2fx", target)
		g.Met = st.N > 0 && st.Median >= target
	} else {
		g.Target = fmt.Sprintf("<= %.2fx", target)
		g.Met = st.N > 0 && st.Median <= target
	}
	if st.N > 0 {
		g.Range = fmt.Sprintf("%.2f–%.2f, n=%d", st.Min, st.Max, st.N)
	} else {
		g.Detail = "no successful pair of runs"
	}
	return g, true
}

// cmpGoalRow is a goal's row in a report's goals table.
func cmpGoalRow(g CmpGoal) string {
	v := "—"
	if g.Range != "" {
		v = fmt.Sprintf("%.2f× (%s)", g.Value, strings.ReplaceAll(g.Range, "x", "×"))
	}
	if g.Detail != "" {
		v = strings.TrimPrefix(v+"; "+g.Detail, "—; ")
	}
	verdict := "**MISSED**"
	if g.Met {
		verdict = "met"
	}
	return fmt.Sprintf("| %s | %s | %s | %s |\n", g.Text, v, strings.ReplaceAll(g.Target, "x", "×"), verdict)
}

// cmpEvaluateGoals checks every goal whose scenario and baseline ran.
func cmpEvaluateGoals(r *CompareResult) []CmpGoal {
	var out []CmpGoal
	ratioGoal := func(id, text, scen, impl string, pick func(CmpRatios) CmpStat, atLeast bool, target float64) {
		if g, ok := cmpRatioGoal(r, id, text, scen, impl, pick, atLeast, target); ok {
			out = append(out, g)
		}
	}
	rate := func(x CmpRatios) CmpStat { return x.Rate }
	cpu := func(x CmpRatios) CmpStat { return x.CPU }
	p50 := func(x CmpRatios) CmpStat { return x.P50 }
	p99 := func(x CmpRatios) CmpStat { return x.P99 }
	ratioGoal("pipe64-vs-protoactor", "pipelined 64 B rate, ZLink ÷ Proto.Actor remote", "64B-pipelined", "protoactor", rate, true, goalCmpPipeVsProto)
	ratioGoal("pipe64-vs-tcp", "pipelined 64 B rate, ZLink ÷ raw TCP", "64B-pipelined", "tcp", rate, true, goalCmpPipeVsTCP)
	ratioGoal("cpu64-vs-protoactor", "CPU per round trip (client + server process), pipelined 64 B, ZLink ÷ Proto.Actor", "64B-pipelined", "protoactor", cpu, false, goalCmpCPUVsProto)
	for _, size := range []string{"64B", "16KiB"} {
		text := strings.Replace(strings.Replace(size, "KiB", " KiB", 1), "4B", "4 B", 1)
		ratioGoal("lock"+size+"-p50-vs-protoactor", "lockstep "+text+" p50 latency, ZLink ÷ Proto.Actor remote", size+"-lockstep", "protoactor", p50, false, goalCmpP50VsProto)
		ratioGoal("lock"+size+"-p99-vs-zmq4", "lockstep "+text+" p99 latency, ZLink ÷ raw zmq4", size+"-lockstep", "zmq4", p99, false, goalCmpP99VsZMQ)
	}
	if sc := r.scenario("64B-pipelined"); sc != nil {
		// The quotient of the two medians (neither is ZLink's own
		// CallFuture run, which VsZlink divides by).
		gpc, pa := sc.impl("zlink-gpc"), sc.impl("protoactor")
		if gpc != nil && pa != nil {
			g := CmpGoal{ID: "pipe64-gpc-vs-protoactor", Text: "pipelined 64 B rate, ZLink with a goroutine per call (1000 goroutines in Node.Call) ÷ Proto.Actor remote",
				Scenario: sc.Name, Target: fmt.Sprintf(">= %.2fx", goalCmpGPCVsProto)}
			if gpc.Rate.N > 0 && pa.Rate.N > 0 && pa.Rate.Median > 0 {
				g.Value = gpc.Rate.Median / pa.Rate.Median
				g.Met = g.Value >= goalCmpGPCVsProto
				g.Range = fmt.Sprintf("medians %.0f ÷ %.0f rt/s", gpc.Rate.Median, pa.Rate.Median)
			} else {
				g.Detail = "no successful run"
			}
			out = append(out, g)
		}
	}
	if sc := r.scenario("16KiB-pipelined"); sc != nil {
		if z := sc.impl("zlink"); z != nil {
			g := CmpGoal{ID: "pipe16k-works", Text: "16 KiB pipelined (1000 in flight) works with ZLink", Scenario: sc.Name,
				Value: z.Rate.Median, Target: "every run completes", Met: z.Failed == 0 && z.Rate.N > 0}
			g.Detail = fmt.Sprintf("%d of %d runs completed, median %.0f rt/s", z.Rate.N, z.Rate.N+z.Failed, z.Rate.Median)
			out = append(out, g)
		}
	}
	if fo := r.Failover; fo != nil && len(fo.Trials) > 0 {
		failed := 0
		for _, t := range fo.Trials {
			if t.Error != "" {
				failed++
			}
		}
		g := CmpGoal{ID: "failover-lost", Text: "failover: requests lost when one of two ZLink Servers is killed (SIGKILL) under load",
			Scenario: "failover", Value: float64(fo.Lost), Target: "0 lost", Met: fo.Lost == 0 && failed == 0}
		g.Detail = fmt.Sprintf("%d lost in %d trials (%d failed to run); first rerouted success %s ms after the kill",
			fo.Lost, len(fo.Trials), failed, fo.FirstMs.format("%.1f"))
		out = append(out, g)
	}
	return out
}
