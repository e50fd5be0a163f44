package benchrun

import (
	"context"
	"flag"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var spotsProfile = flag.String("benchrun.spotsprofile", "",
	"TestSpotsHeapProfile: write a heap profile taken with the bench's idle Spots active to this file")

// TestSpotsBench_Quick runs the registered "spots" bench in quick mode and
// checks that it printed every line, with a number where one belongs (no
// timing thresholds: the goal lines may say met or missed).
func TestSpotsBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var out strings.Builder
	if err := Run(ctx, &out, []string{"spots"}, true); err != nil {
		t.Fatalf("Run(spots): %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	num := `([0-9.]+)`
	for _, re := range []string{
		`activations spot first-call\s+n=\d+ callers=\d+\s+` + num + ` activations/s`,
		`activations spot repeat-call\s+n=\d+ callers=\d+\s+` + num + ` calls/s`,
		`activations channel\s+n=\d+ callers=\d+\s+` + num + ` calls/s`,
		`requests owner=local\s+inflight=1\s+spot\s+` + num + ` req/s`,
		`requests owner=local\s+inflight=1\s+channel\s+` + num + ` req/s`,
		`requests owner=local\s+inflight=\d+\s+spot\s+` + num + ` req/s`,
		`requests owner=local\s+inflight=\d+\s+channel\s+` + num + ` req/s`,
		`requests owner=remote\s+inflight=1\s+spot\s+` + num + ` req/s`,
		`requests owner=remote\s+inflight=1\s+channel\s+` + num + ` req/s`,
		`requests owner=remote\s+inflight=\d+\s+spot\s+` + num + ` req/s`,
		`requests owner=remote\s+inflight=\d+\s+channel\s+` + num + ` req/s`,
		`ratio requests owner=local spot/channel: inflight=1 rate ` + num + `x`,
		`ratio requests owner=remote spot/channel: inflight=1 rate ` + num + `x`,
		`heap spots=\d+ spot\s+` + `(-?[0-9.]+)` + ` B/Spot`,
		`heap spots=\d+ store part\s+` + `(-?[0-9.]+)` + ` B/Spot`,
		`heap actors=\d+ protoactor\s+` + `(-?[0-9.]+)` + ` B/actor`,
		`rehome servers=3 spots=\d+ on the crashed node \S+: ` + num,
		`rehome \d+ Spots answered from another server: first \S+\s+p50 \S+\s+all (\S+) after the crash`,
		`timers spots=\d+ period=50ms window=\S+\s+firings ` + num + ` \(\d+% of due\)\s+merged \d+\s+cpu/firing [0-9.]+µs\s+lateness p50 \S+ p99 \S+`,
		`goal timers lateness p99 <= 5ms at (\d+) Spots × 20 Hz: \S+, (?:met|missed)`,
		`reminders servers=3 reminders=(\d+) period=1s registered in \S+ \((\d+)/s\)`,
		`reminders window=\S+ firings (\d+) \(\d+% of due\) redis ` + num + ` commands/s \(` + num + ` per firing`,
		`goal reminders lateness p99 <= 2s at (\d+) reminders / 1s: \S+, (?:met|missed)`,
	} {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no line matching %q", re)
			continue
		}
		if strings.HasPrefix(re, "heap ") {
			continue // a difference of two heap readings: on the quick N, whatever else winds down may make it anything
		}
		if strings.HasPrefix(re, "rehome ") && strings.Contains(re, "all") {
			if d, err := time.ParseDuration(m[1]); err != nil || d <= 0 {
				t.Errorf("re-home time %q, want a positive duration", m[1])
			}
			continue
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || v <= 0 {
			t.Errorf("line %q: number %q, want > 0", re, m[1])
		}
	}
	for _, goal := range []string{
		"goal heap per Spot <= 2048 B: ",
		"goal heap per Spot <= 2.5x protoactor ",
		"goal re-home <= lease TTL + margin (1.2s): ",
	} {
		re := regexp.MustCompile(regexp.QuoteMeta(goal) + `.*: (met|missed)\n`)
		if !re.MatchString(text) {
			t.Errorf("no goal line %q ending in met or missed", goal)
		}
	}
}

// TestSpotsHeapProfile writes the heap profile behind the heap numbers of
// docs/benchmarks.md; it runs only when asked:
//
//	go test -run TestSpotsHeapProfile ./cmd/node/internal/benchrun -args -benchrun.spotsprofile=heap.out
//	go tool pprof -sample_index=inuse_space -top heap.out
func TestSpotsHeapProfile(t *testing.T) {
	if *spotsProfile == "" {
		t.Skip("writes a heap profile only when asked: -args -benchrun.spotsprofile=FILE")
	}
	runtime.MemProfileRate = 4096
	spotsHeapProfile = *spotsProfile
	defer func() { spotsHeapProfile = "" }()
	var out strings.Builder
	if err := spotsHeap(context.Background(), &out, spotsPlanFor(false)); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
}
