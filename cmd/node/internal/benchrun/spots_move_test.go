package benchrun

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpotsMoveBench_Quick runs the registered "spots-move" bench in quick
// mode and checks that it printed every line, with a number where one
// belongs (no timing thresholds: the goal lines may say met or missed).
func TestSpotsMoveBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out strings.Builder
	if err := Run(ctx, &out, []string{"spots-move"}, true); err != nil {
		t.Fatalf("Run(spots-move): %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	num := `([0-9.]+)`
	dur := `([0-9.]+(?:ns|µs|ms|s|m[0-9.]+s))`
	for _, c := range []struct {
		re       string
		duration bool // the number is a duration
	}{
		{`drain baseline stop n=\d+\s+` + num + ` Spots/s`, false},
		{`drain baseline restore n=\d+ callers=\d+\s+` + num + ` activations/s`, false},
		{`drain alone n=\d+ ` + dur, true},
		{`drain activations n=\d+ callers=\d+\s+` + num + ` activations/s`, false},
		{`drain handoff n=\d+ moved=\d+\s+` + num + ` moves/s`, false},
		{`drain handoff n=\d+ moved=\d+\s+[0-9.]+ moves/s\s+total ` + dur, true},
		{`drain check: ` + num + ` of \d+ Spots answered`, false},
		{`drain runtime warnings and errors logged: \d+`, false},
		{`callers: \d+ goroutines on Object Client \S+, .* ` + num + ` calls in`, false},
		{`latency steady\s+n=` + num, false},
		{`latency steady\s+n=\d+\s+[0-9.]+ calls/s\s+p50\s+\S+\s+p99\s+` + dur, true},
		{`latency relocate\s+n=\d+\s+[0-9.]+ calls/s\s+p50\s+\S+\s+p99\s+` + dur, true},
		{`latency after-relocate\s+n=\d+\s+[0-9.]+ calls/s\s+p50\s+\S+\s+p99\s+` + dur, true},
		{`latency drain\s+n=\d+\s+[0-9.]+ calls/s\s+p50\s+\S+\s+p99\s+` + dur, true},
		{`latency after-drain\s+n=\d+\s+[0-9.]+ calls/s\s+p50\s+\S+\s+p99\s+` + dur, true},
		{`spot.Relocate\(\S+ → \S+\), \S+: moved ` + num, false},
		{`ratio latency vs steady: relocate p50 [0-9.]+x p99 ` + num + `x; drain p50 [0-9.]+x p99 ` + `[0-9.]+x`, false},
		{`callers state check: \d+ of \d+ Spots`, false},
		{`callers errors: `, false},
		{`callers runtime warnings and errors logged: \d+`, false},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no line matching %q", c.re)
			continue
		}
		if len(m) < 2 {
			continue
		}
		if c.duration {
			if d, err := time.ParseDuration(m[1]); err != nil || d <= 0 {
				t.Errorf("line %q: duration %q, want > 0", c.re, m[1])
			}
			continue
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
			t.Errorf("line %q: number %q, want > 0", c.re, m[1])
		}
	}
	for _, goal := range []string{
		"goal zero caller errors while Spots move (relocate and drain, whole run): ",
		"goal every Spot moved (",
	} {
		re := regexp.MustCompile(regexp.QuoteMeta(goal) + `.*: (met|missed)\n`)
		if !re.MatchString(text) {
			t.Errorf("no goal line %q ending in met or missed", goal)
		}
	}
}
