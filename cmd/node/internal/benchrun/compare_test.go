package benchrun

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// compareHelperEnv makes the test binary the server process of the
// compare bench (TestCompareHelperServer), as `zlink-node bench
// compare-server` is for the real binary.
const compareHelperEnv = "ZLINK_BENCHRUN_COMPARE_SERVER"

// TestCompareHelperServer is not a test: run by TestCompareBench_Quick in
// a child process, it serves one implementation until told to quit.
func TestCompareHelperServer(t *testing.T) {
	if os.Getenv(compareHelperEnv) != "1" {
		t.Skip("the compare bench's server process (started by TestCompareBench_Quick)")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if err := CompareServerMain(args, os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

func testLauncher(t *testing.T) cmpLauncher {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return cmpLauncher{argv: []string{exe, "-test.run=^TestCompareHelperServer$", "--"}, env: []string{compareHelperEnv + "=1"}}
}

// TestCompareBench_Quick runs the compare bench in quick mode for one
// scenario and one pair (ZLink and Proto.Actor remote, each server in a
// process of its own) and checks that every line it must print is there,
// with the JSON, markdown region and chart written. No timing thresholds.
func TestCompareBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "bench.md")
	if err := os.WriteFile(docs, []byte("# B\n\nbefore\n\n"+CompareBegin+"\nold\n"+CompareEnd+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, res := runCompareIsolated(t, ctx, CompareOptions{
		Quick: true, Scenarios: []string{"64B-pipelined"}, Impls: []string{"protoactor"},
		JSONPath: filepath.Join(dir, "r.json"), DocsPath: docs, ImgDir: filepath.Join(dir, "img"),
	})
	for _, impl := range []string{"zlink", "protoactor"} {
		if !regexp.MustCompile(`compare server impl=` + impl + ` pid=\d+ endpoint=\S+`).MatchString(text) {
			t.Errorf("no server line for %s", impl)
		}
		for _, round := range []string{"1", "2"} {
			re := regexp.MustCompile(`compare run scenario=64B-pipelined round=` + round + ` impl=` + impl +
				`\s+\d+ rt/s\s+cpu/rt client\s+[\d.]+µs server\s+[\d.]+µs\s+\(n=\d+\)`)
			if !re.MatchString(text) {
				t.Errorf("no run line for %s round %s", impl, round)
			}
		}
		if !regexp.MustCompile(`compare summary scenario=64B-pipelined impl=` + impl + `\s+rate \d+ \(\d+–\d+\) rt/s`).MatchString(text) {
			t.Errorf("no summary line for %s", impl)
		}
	}
	for _, want := range []string{
		"zlink/protoactor rate ",
		"goal pipe64-vs-protoactor: ",
		"goal cpu64-vs-protoactor: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	if len(res.Scenarios) != 1 || len(res.Scenarios[0].Runs) != 4 {
		t.Fatalf("scenarios %+v", res.Scenarios)
	}
	back, err := ReadCompareJSON(filepath.Join(dir, "r.json"))
	if err != nil || len(back.Scenarios) != 1 || len(back.Goals) != len(res.Goals) {
		t.Fatalf("JSON read back: %v %+v", err, back)
	}
	md, _ := os.ReadFile(docs)
	if s := string(md); !strings.Contains(s, "before") || !strings.Contains(s, "after") || strings.Contains(s, "\nold\n") ||
		!strings.Contains(s, "| Proto.Actor remote |") || !strings.Contains(s, "img/compare-64B-pipelined.svg") {
		t.Errorf("markdown region not regenerated:\n%s", s)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "img", "compare-64B-pipelined.svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("chart: %v", err)
	}
}

// TestCompareBench_TLSCost runs quick lockstep rounds of ZLink with and
// without TLS (the TLS files made for the run, the server in a process of
// its own) and checks the "TLS ÷ plain" line of the output and the report.
func TestCompareBench_TLSCost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "bench.md")
	if err := os.WriteFile(docs, []byte("# B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := RunCompare(ctx, &out, CompareOptions{
		Quick: true, Scenarios: []string{"64B-lockstep"}, Impls: []string{"zlink-tls"},
		DocsPath: docs, launcher: testLauncher(t),
	})
	text := out.String()
	t.Log("\n" + text)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`compare tls-cost scenario=64B-lockstep TLS ÷ plain: rate [\d.]+x \([\d.]+x–[\d.]+x\) p50 [\d.]+x`).MatchString(text) {
		t.Error("no tls-cost line")
	}
	sc := res.Scenarios[0]
	if len(sc.Impls) != 2 || sc.Impls[1].Impl != "zlink-tls" || sc.Impls[1].Failed != 0 || sc.Impls[1].Rate.N != 2 {
		t.Fatalf("summaries %+v", sc.Impls)
	}
	md, _ := os.ReadFile(docs)
	if s := string(md); !strings.Contains(s, "| ZLink TLS |") || !strings.Contains(s, "TLS costs (ZLink TLS ÷ ZLink, round by round): rate ") {
		t.Errorf("report:\n%s", s)
	}
}

func TestCmpReplaceRegion(t *testing.T) {
	doc := "a\n" + CompareBegin + "\nx\n" + CompareEnd + "\nb\n"
	got, err := cmpReplaceRegion(doc, "y\n")
	if err != nil || got != "a\n"+CompareBegin+"\ny\n"+CompareEnd+"\nb\n" {
		t.Fatalf("%q %v", got, err)
	}
	got, err = cmpReplaceRegion("a\n", "y\n")
	if err != nil || got != "a\n\n"+CompareBegin+"\ny\n"+CompareEnd+"\n" {
		t.Fatalf("no markers: %q %v", got, err)
	}
	if _, err := cmpReplaceRegion(CompareEnd+CompareBegin, "y"); err == nil {
		t.Fatal("markers out of order accepted")
	}
}

func TestCmpSummarizeScenario_PairRatios(t *testing.T) {
	runs := []CmpRun{
		{Round: 1, Impl: "zlink", N: 10, Rate: 200, ClientCPUus: 1, ServerCPUus: 1},
		{Round: 1, Impl: "tcp", N: 10, Rate: 100, ClientCPUus: 2, ServerCPUus: 2},
		{Round: 2, Impl: "tcp", N: 10, Rate: 50, ClientCPUus: 2, ServerCPUus: 2},
		{Round: 2, Impl: "zlink", N: 10, Rate: 300, ClientCPUus: 1, ServerCPUus: 3},
		{Round: 3, Impl: "zlink", Error: "boom"},
		{Round: 3, Impl: "tcp", N: 10, Rate: 70, ClientCPUus: 1, ServerCPUus: 1},
	}
	s := cmpSummarizeScenario(runs, []string{"zlink", "tcp"})
	z, tc := s[0], s[1]
	if z.Failed != 1 || z.Rate.N != 2 || z.Rate.Median != 250 || z.Rate.Min != 200 || z.Rate.Max != 300 {
		t.Fatalf("zlink %+v", z)
	}
	// Round 1: 200/100 = 2; round 2: 300/50 = 6; round 3 has no ZLink run.
	if r := tc.VsZlink.Rate; r.N != 2 || r.Median != 4 || r.Min != 2 || r.Max != 6 {
		t.Fatalf("rate ratios %+v", r)
	}
	if c := tc.VsZlink.CPU; c.N != 2 || c.Min != 0.5 || c.Max != 1 {
		t.Fatalf("cpu ratios %+v", c)
	}
	if st := cmpStatOf([]float64{math.NaN(), 3, 1, 2}); st.N != 3 || st.Median != 2 {
		t.Fatalf("statOf %+v", st)
	}
}

func TestCmpEvaluateGoals(t *testing.T) {
	r := &CompareResult{Scenarios: []CmpScenario{{
		Name: "64B-pipelined",
		Impls: []CmpImplSummary{
			{Impl: "zlink"},
			{Impl: "protoactor", VsZlink: CmpRatios{Rate: CmpStat{Median: 2, Min: 1.8, Max: 2.2, N: 5}, CPU: CmpStat{Median: 0.7, N: 5}}},
		},
	}}}
	goals := cmpEvaluateGoals(r)
	if len(goals) != 2 {
		t.Fatalf("goals %+v", goals)
	}
	if !goals[0].Met || goals[1].Met {
		t.Fatalf("rate 2x >= 1.5 must be met, cpu 0.7 <= 0.6 missed: %+v", goals)
	}
	if !strings.HasSuffix(goals[1].Line(), ": MISSED") {
		t.Fatal(goals[1].Line())
	}
}

// TestCmpTopOfProfile reads a CPU profile this process writes.
func TestCmpTopOfProfile(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "p")
	p, err := cmpStartProfile(prefix)
	if err != nil {
		t.Skip(err) // another CPU profile is running (go test -cpuprofile)
	}
	// Work until the process has used 300 ms of CPU (the profiler samples
	// CPU time, at 100 Hz), however little of it a loaded machine gives.
	cpu0, deadline := cmpProcessCPU(), time.Now().Add(30*time.Second)
	x := 0
	for cmpProcessCPU()-cpu0 < 300*time.Millisecond && time.Now().Before(deadline) {
		for range 100 {
			x += len(cmpPayload(4096))
		}
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	top, err := cmpTopOfProfile(prefix+".cpu.pprof", "", "cpu", 5)
	if err != nil {
		t.Fatal(err)
	}
	if top.Unit != "nanoseconds" || top.Total <= 0 || len(top.Top) == 0 {
		t.Fatalf("%+v (x=%d)", top, x)
	}
	if _, err := cmpTopOfProfile(prefix+".allocs.pprof", prefix+".allocs-base.pprof", "alloc_space", 5); err != nil {
		t.Fatal(err)
	}
}

// TestCmpEvaluateGoals_GoroutinePerCall: the goroutine-per-call row is
// judged against Proto.Actor's pipelined rate (the quotient of the two
// medians), met at 1.2x.
func TestCmpEvaluateGoals_GoroutinePerCall(t *testing.T) {
	for _, c := range []struct {
		gpc, pa float64
		met     bool
	}{{130_000, 100_000, true}, {110_000, 100_000, false}} {
		r := &CompareResult{Scenarios: []CmpScenario{{
			Name: "64B-pipelined",
			Impls: []CmpImplSummary{
				{Impl: "zlink"},
				{Impl: "protoactor", Rate: CmpStat{Median: c.pa, N: 3}},
				{Impl: "zlink-gpc", Rate: CmpStat{Median: c.gpc, N: 3}},
			},
		}}}
		var g *CmpGoal
		for _, x := range cmpEvaluateGoals(r) {
			if x.ID == "pipe64-gpc-vs-protoactor" {
				g = &x
			}
		}
		if g == nil || g.Met != c.met || g.Value != c.gpc/c.pa {
			t.Fatalf("%v ÷ %v: goal %+v, want met=%v", c.gpc, c.pa, g, c.met)
		}
	}
}
