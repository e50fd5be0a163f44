package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zlink-go/zlink/test/fault"
)

func init() {
	register(Bench{
		Name: "faults",
		About: "the fault scenarios by name (--scenario, default all): per scenario every call issued and ended, " +
			"replies and errors by type, and the measured detection and recovery times",
		Explicit: true,
		Run:      runFaults,
	})
}

// faultScenario is one named fault scenario. run builds its nodes on the
// rig, runs a load through the fault and the recovery and returns what
// it measured; the load must have ended.
type faultScenario struct {
	name  string
	about string
	run   func(ctx context.Context, r *faultRig, quick bool) (faultOutcome, error)
}

// faultOutcome is what a scenario measured. detect is the time from the
// fault to its effect the scenario names (a lost peer, the first ErrBusy,
// a failed connection), recover the time from the end of the fault (heal,
// restart) to normal service; zero when not meaningful.
type faultOutcome struct {
	load            *fault.Ledger
	extra           []*fault.Ledger // more accounted calls (other clients)
	base            int             // goroutines with the scenario's nodes up, before the load
	heap            uint64          // the live heap then
	detect, recover time.Duration
	note            string
}

// faultScenarios lists the scenarios in the order they run.
var faultScenarios = []faultScenario{
	{"partition-symmetric", "one of two Servers cut off both ways under load, then healed", runPartition(false)},
	{"partition-asymmetric", "the replies of one of two Servers held (one-way loss) under load, then healed", runPartition(true)},
	{"kill9", "a Server process killed with SIGKILL under load, restarted with the same fixed RID", runKill9},
	{"kill9-new-rid", "a Server process killed with SIGKILL under load, restarted under a new RID (automatic topology, Redis)", runKill9NewRID},
	{"kill9-spots", "an Object Server process hosting Spots killed with SIGKILL under load (Redis): its Spots re-homed", runKill9Spots},
	{"redis-down", "the Location Store killed under load, started again empty", runRedisDown},
	{"cluster-master-kill", "the Redis Cluster master holding the mesh's descriptors, with a replica, killed under load (automatic topology)", runClusterMasterKill},
	{"cluster-master-kill-spots", "the Redis Cluster master holding the records of some Spots under load, with a replica, killed: those Spots fenced and claimed again under a higher epoch", runClusterMasterKillSpots},
	{"slow-consumer", "a handler far slower than its arrivals: ErrBusy, and another channel unaffected", runSlowConsumer},
	{"storm", "1 MiB payloads against a 4 MiB byte budget", runStorm},
	{"stop-reading", "a Client that stops reading its socket; the Server's other Clients unaffected", runStopReading},
}

// FaultScenarios returns the scenario names, in the order they run.
func FaultScenarios() []string {
	out := make([]string, len(faultScenarios))
	for i, s := range faultScenarios {
		out[i] = s.name
	}
	return out
}

type scenariosKey struct{}

// WithScenarios asks `bench faults` to run only the named scenarios.
func WithScenarios(ctx context.Context, names []string) context.Context {
	return context.WithValue(ctx, scenariosKey{}, names)
}

// scenarioFlag is what --scenario set (AddFlags).
var scenarioFlag []string

// FlagSet is the part of a command's flag set AddFlags uses.
type FlagSet interface {
	StringSliceVar(p *[]string, name string, value []string, usage string)
}

// AddFlags adds the benches' own flags to the bench command: --scenario
// for `bench faults`.
func AddFlags(fs FlagSet) {
	fs.StringSliceVar(&scenarioFlag, "scenario", nil, "faults: only these scenarios ("+strings.Join(FaultScenarios(), ", ")+")")
}

func runFaults(ctx context.Context, w io.Writer, quick bool) error {
	names, _ := ctx.Value(scenariosKey{}).([]string)
	if len(names) == 0 {
		names = scenarioFlag
	}
	var unknown []string
	for _, n := range names {
		if !slices.Contains(FaultScenarios(), n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown bench scenario %s (known: %s)", strings.Join(unknown, ", "), strings.Join(FaultScenarios(), ", "))
	}
	var failed []string
	for _, s := range faultScenarios {
		if len(names) > 0 && !slices.Contains(names, s.name) {
			continue
		}
		if err := runFaultScenario(ctx, w, s, quick); err != nil {
			fmt.Fprintf(w, "faults %s: FAILED: %v\n", s.name, err)
			failed = append(failed, s.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("faults: %s failed", strings.Join(failed, ", "))
	}
	fmt.Fprintln(w, "faults ok: every call of every scenario ended once, with a reply or a typed error")
	return nil
}

func runFaultScenario(ctx context.Context, w io.Writer, s faultScenario, quick bool) error {
	r := &faultRig{ctx: ctx}
	defer r.close()
	out, err := s.run(ctx, r, quick)
	if out.load != nil {
		out.load.Stop()
	}
	if err != nil {
		return err
	}
	accts := append([]*fault.Ledger{out.load}, out.extra...)
	line, err := faultLine(accts)
	if err != nil {
		return err
	}
	g, gerr := goroutinesBack(ctx, out.base)
	fmt.Fprintf(w, "faults %s: %s detect=%v recover=%v goroutines=%d/%d heap_mib=%.1f/%.1f %s\n", s.name, line,
		out.detect.Round(time.Millisecond), out.recover.Round(time.Millisecond), g, out.base,
		float64(faultHeap())/(1<<20), float64(out.heap)/(1<<20), out.note)
	return gerr
}

// faultLine sums the accounts, reconciles them and formats
// issued/ended/ok/errors by type.
func faultLine(accts []*fault.Ledger) (string, error) {
	var sum fault.Account
	for _, l := range accts {
		sum = sum.Add(l.Account())
	}
	issued, ended, ok, untyped := sum.Issued, sum.Ended, sum.OK, len(sum.Untyped)
	errs := map[string]int{}
	for k, v := range sum.Errs {
		errs[strings.TrimPrefix(k, "zlink: ")] += v
	}
	kinds := make([]string, 0, len(errs))
	for k, v := range errs {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(kinds)
	failed := 0
	for _, v := range errs {
		failed += v
	}
	line := fmt.Sprintf("issued=%d ended=%d ok=%d errors={%s} untyped=%d", issued, ended, ok, strings.Join(kinds, ","), untyped)
	if err := sum.Check(); err != nil {
		return line, fmt.Errorf("%s: %w", line, err)
	}
	switch {
	case ok+failed != ended:
		return line, fmt.Errorf("%s: %d replies and %d errors for %d calls", line, ok, failed, ended)
	case ok == 0:
		return line, errors.New(line + ": no call succeeded")
	}
	return line, nil
}

// baseline is the goroutine count and the live heap (after a collection)
// a scenario compares with after recovery.
func baseline() (goroutines int, heap uint64) { return runtime.NumGoroutine(), faultHeap() }

// faultHeap is the heap in use after one collection.
func faultHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
