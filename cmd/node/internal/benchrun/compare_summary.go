package benchrun

import (
	"fmt"
	"io"
	"math"
)

// The lines and summaries of a comparison's runs.

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
	base := ""
	if len(s.Impls) > 0 {
		base = s.Impls[0].Impl // every ratio is against the first
	}
	for _, im := range s.Impls {
		line := fmt.Sprintf("compare summary scenario=%s impl=%-10s rate %s rt/s", s.Name, im.Impl, im.Rate.format("%.0f"))
		if s.Mode == "lockstep" {
			line += fmt.Sprintf("  p50 %sµs  p99 %sµs", im.P50us.format("%.1f"), im.P99us.format("%.1f"))
		}
		line += fmt.Sprintf("  cpu/rt %sµs", im.CPUus.format("%.2f"))
		if im.Impl != base {
			line += fmt.Sprintf("  %s/%s rate %s", base, im.Impl, im.VsZlink.Rate.format("%.2fx"))
			if s.Mode == "lockstep" {
				line += fmt.Sprintf(" p50 %s p99 %s", im.VsZlink.P50.format("%.2fx"), im.VsZlink.P99.format("%.2fx"))
			}
			line += fmt.Sprintf(" cpu %s", im.VsZlink.CPU.format("%.2fx"))
		}
		if im.Failed > 0 {
			line += fmt.Sprintf("  FAILED runs=%d", im.Failed)
		}
		fmt.Fprintln(w, line)
		if im.Impl == "zlink-tls" {
			c := cmpTLSCost(im)
			line = fmt.Sprintf("compare tls-cost scenario=%s TLS ÷ plain: rate %s", s.Name, c.Rate.format("%.2fx"))
			if s.Mode == "lockstep" {
				line += fmt.Sprintf(" p50 %s p99 %s", c.P50.format("%.2fx"), c.P99.format("%.2fx"))
			}
			fmt.Fprintln(w, line+fmt.Sprintf(" cpu %s", c.CPU.format("%.2fx")))
		}
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
// pair-by-pair ratios to ZLink (same round): to impls[0], zlink in the
// compare bench and zlink-spot in its Spots comparison.
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
			z, ok := byRound[run.Round][impls[0]]
			if !ok || name == impls[0] {
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
