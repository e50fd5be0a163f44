package benchrun

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// faultLineRE is one scenario's result line.
var faultLineRE = regexp.MustCompile(`^faults (\S+): issued=(\d+) ended=(\d+) ok=(\d+) errors=\{([^}]*)\} untyped=(\d+) detect=\S+ recover=\S+ goroutines=\d+/\d+ heap_mib=[\d.]+/[\d.]+`)

// TestFaults_Quick runs every fault scenario in its short version and
// checks that each prints its line and that its accounts reconcile: every
// call issued ended once, with a reply or a typed error.
func TestFaults_Quick(t *testing.T) {
	for _, b := range List() {
		if b.Name == "faults" && !b.Explicit {
			t.Fatal("the fault scenarios would run with every bench")
		}
	}
	var out strings.Builder
	if err := Run(context.Background(), &out, []string{"faults"}, true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	seen := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		m := faultLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		failed := 0
		if m[5] != "" {
			for _, kv := range strings.Split(m[5], ",") {
				_, v, _ := strings.Cut(kv, "=")
				x, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%s: errors %q", m[1], m[5])
				}
				failed += x
			}
		}
		if n(2) != n(3) || n(6) != 0 || n(4)+failed != n(3) || n(4) == 0 {
			t.Errorf("%s: accounts do not reconcile: %s", m[1], line)
		}
		seen[m[1]] = true
	}
	for _, s := range FaultScenarios() {
		if !seen[s] {
			t.Errorf("no line for scenario %s", s)
		}
	}
	if !strings.Contains(out.String(), "faults ok") {
		t.Errorf("no verdict")
	}
}

func TestFaults_ScenarioByName(t *testing.T) {
	var out strings.Builder
	ctx := WithScenarios(context.Background(), []string{"partition-asymmetric"})
	if err := Run(ctx, &out, []string{"faults"}, true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if strings.Count(out.String(), "faults partition-asymmetric: issued=") != 1 || strings.Contains(out.String(), "faults kill9") {
		t.Fatalf("not just the scenario asked for:\n%s", out.String())
	}
	ctx = WithScenarios(context.Background(), []string{"no-such"})
	if err := Run(ctx, &out, []string{"faults"}, true); err == nil || !strings.Contains(err.Error(), "unknown bench scenario") {
		t.Fatalf("an unknown scenario: %v", err)
	}
}
