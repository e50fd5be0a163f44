package benchrun

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCompareBench_Spots runs `bench compare --spots` in its smallest
// form: one short round of 64 B lockstep and pipelined, a ZLink Spot (its
// Object Server in a process of its own, one redis-server) against a
// Proto.Actor cluster grain (its member in a process of its own), and
// checks the lines it must print, the goals and the markdown region. No
// timing thresholds.
func TestCompareBench_Spots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "bench.md")
	if err := os.WriteFile(docs, []byte("# B\n\nbefore\n\n"+SpotsCompareBegin+"\nold\n"+SpotsCompareEnd+"\n\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, res := runCompareIsolated(t, ctx, CompareOptions{
		Spots: true, Quick: true, Rounds: 1, Lockstep: 100 * time.Millisecond, Pipelined: 150 * time.Millisecond,
		Scenarios: []string{"64B-lockstep", "64B-pipelined"},
		JSONPath:  filepath.Join(dir, "r.json"), DocsPath: docs,
	})
	if !strings.Contains(text, "compare store: redis-server 127.0.0.1:") {
		t.Error("no store line")
	}
	for _, impl := range []string{"zlink-spot", "protoactor-grain"} {
		if !regexp.MustCompile(`compare server impl=` + impl + ` pid=\d+ endpoint=\S+`).MatchString(text) {
			t.Errorf("no server line for %s", impl)
		}
		for _, sc := range []string{"64B-lockstep", "64B-pipelined"} {
			if !regexp.MustCompile(`compare run scenario=` + sc + ` round=1 impl=` + impl + `\s+\d+ rt/s`).MatchString(text) {
				t.Errorf("no run line for %s %s", impl, sc)
			}
		}
	}
	for _, want := range []string{
		"zlink-spot/protoactor-grain rate ",
		"goal spot-pipe64-vs-grain: ",
		"goal spot-lock64-p50-vs-grain: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	if len(res.Goals) != 2 {
		t.Errorf("goals %+v", res.Goals)
	}
	for _, sc := range res.Scenarios {
		for _, im := range sc.Impls {
			if im.Failed > 0 {
				t.Errorf("%s %s: failed runs %v", sc.Name, im.Impl, im.Errors)
			}
		}
	}
	back, err := ReadCompareJSON(filepath.Join(dir, "r.json"))
	if err != nil || !back.Spots || len(back.Scenarios) != 2 {
		t.Fatalf("JSON read back: %v %+v", err, back)
	}
	md, _ := os.ReadFile(docs)
	if s := string(md); !strings.Contains(s, "before") || !strings.Contains(s, "after") || strings.Contains(s, "\nold\n") ||
		!strings.Contains(s, "| Proto.Actor grain |") || !strings.Contains(s, "| ZLink Spot |") {
		t.Errorf("markdown region not regenerated:\n%s", s)
	}
}
