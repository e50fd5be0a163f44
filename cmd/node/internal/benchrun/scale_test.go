package benchrun

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestScaleBench_Quick runs `bench scale --quick` (meshes of 4 and 8 nodes,
// an Object Server mesh and a client tier of 8, each run in a child
// process of this test binary, over a real redis-server) and checks that
// every line it must print is there with a positive number, and a verdict
// for every goal. No timing thresholds.
func TestScaleBench_Quick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, &out, []string{"scale"}, true); err != nil {
		t.Fatalf("Run(scale): %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	if !regexp.MustCompile(`scale baseline \(a node alone in its mesh\): heap=\S+ goroutines=\S+ fds=\d+`).MatchString(text) {
		t.Error("no baseline line")
	}
	row := regexp.MustCompile(`scale run=(\S+) nodes=(\d+)(?: object_servers=\d+ object_clients=\d+)? connections=(\d+) full_mesh=(\S+) ` +
		`cpu_per_node=(\S+)% redis_cmds=(\S+)/s per_node=(\S+)/s redis_out=\S+/s per_node=\S+/s heap_per_node=\S+ heap_per_peer=\S+ ` +
		`goroutines_per_node=(\S+) goroutines_per_peer=\S+ fds=(\d+) fds_per_node=\S+ weight_p50=(\S+) weight_p99=(\S+)`)
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(text, -1) {
		seen[m[1]+"/"+m[2]] = true
		for i, name := range map[int]string{3: "connections", 6: "redis_cmds", 7: "per node", 8: "goroutines", 9: "fds"} {
			if v, err := strconv.ParseFloat(m[i], 64); err != nil || v <= 0 {
				t.Errorf("%s %s: %s = %q, want > 0", m[1], m[2], name, m[i])
			}
		}
		if d, err := time.ParseDuration(m[4]); err != nil || d <= 0 {
			t.Errorf("%s %s: full_mesh %q", m[1], m[2], m[4])
		}
		if m[1] == "plain" {
			p50, err50 := time.ParseDuration(m[10])
			p99, err99 := time.ParseDuration(m[11])
			if err50 != nil || err99 != nil || p50 <= 0 || p99 < p50 {
				t.Errorf("plain %s: weight p50 %q p99 %q, want 0 < p50 ≤ p99", m[2], m[10], m[11])
			}
		}
	}
	for _, want := range []string{"plain/4", "plain/8", "servers/8", "clients90/8"} {
		if !seen[want] {
			t.Errorf("no result line for run %s", want)
		}
	}
	floor := regexp.MustCompile(`scale run=tcp-heartbeat-floor nodes=8 connections=28 cpu_per_node=(\S+)%`).FindStringSubmatch(text)
	if floor == nil {
		t.Error("no heartbeat floor line for 8 nodes")
	} else if v, err := strconv.ParseFloat(floor[1], 64); err != nil || v <= 0 {
		t.Errorf("heartbeat floor cpu_per_node %q, want > 0", floor[1])
	}
	if !regexp.MustCompile(`goal item2 idle CPU per node .*\(the heartbeat floor of 8 nodes in the same run, raw TCP without ZLink: \S+%\)`).MatchString(text) {
		t.Error("the idle CPU goal does not name the floor")
	}
	if n := strings.Count(text, "redis_commands_per_node_per_s:"); n != 4 {
		t.Errorf("%d command breakdown lines, want 4", n)
	}
	verdict := regexp.MustCompile(`(?m)^goal item[12] .*: \S+.* (met|missed)$`)
	if n := len(verdict.FindAllString(text, -1)); n != 6 {
		t.Errorf("%d goal lines with a verdict, want 6", n)
	}
}

// A mesh whose file descriptors do not fit the process's limit is
// skipped with the reason, and the others still run.
func TestScaleFDs(t *testing.T) {
	fixed := scaleFixed{fds: 3}
	if got := scaleFDs(fixed, mixPlain, 128, 1); got != 128*3+128*127+256 {
		t.Errorf("plain 128: %d file descriptors", got)
	}
	// 10 % servers: they connect to each other and to every client; the
	// clients to the servers only.
	if got := scalePeers(mixClients, 100, scaleServers(mixClients, 100)); got != 10*9+2*90*10 {
		t.Errorf("clients90 100: %d peers", got)
	}
	why, skip := scaleSkip(fixed, mixPlain, 256, 20000)
	if !skip || !strings.Contains(why, "needs about 66304 file descriptors") || !strings.Contains(why, "may open 20000") {
		t.Errorf("plain 256 with 20000 files: skip=%v %q", skip, why)
	}
	if _, skip := scaleSkip(fixed, mixPlain, 128, 20000); skip {
		t.Error("plain 128 skipped with 20000 files")
	}
	if _, skip := scaleSkip(fixed, mixPlain, 256, 0); skip {
		t.Error("skipped with an unknown limit")
	}
}
