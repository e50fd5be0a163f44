package test

// Black-box tests of the command-line edges a new user meets (issue 12):
// JSON on every path, why no peer is ready, summary by default, shares
// beside weights, bare HOST:PORT endpoints, plain console logs, CLI words
// in errors, undrain, running handlers in the tree, peers_departed.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// jsonLines decodes every stdout line as one JSON object.
func jsonLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q (stdout %q)", l, stdout)
		}
		out = append(out, m)
	}
	return out
}

func TestCLI_RequestNoPeerSaysWhyInTextAndJSON(t *testing.T) {
	a := cliStartNode(t, "--rid", "a", "--server", "match")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"wrong RID", []string{"--peer", a.endpoint + "#b"}, "wrong_rid"},
		{"wrong mesh", []string{"--peer", a.endpoint, "--mesh", "other"}, "wrong_mesh"},
	}
	for _, c := range cases {
		// A refusal for good ends the wait at once: --wait is far longer
		// than cliRun's bound.
		args := append([]string{"request", "--channel", "match", "--wait", "5m"}, c.args...)
		r := cliRun(t, 20*time.Second, args...)
		if r.code != 1 || !strings.Contains(r.stdout, "error no_target") || !strings.Contains(r.stdout, c.want) {
			t.Fatalf("%s: exit %d, stdout %q: want no_target with %q", c.name, r.code, r.stdout, c.want)
		}
		parseSummary(t, r.stdout)
		r = cliRun(t, 20*time.Second, append(args, "--json")...)
		lines := jsonLines(t, r.stdout)
		sum := lines[len(lines)-1]
		if r.code != 1 || sum["summary"] != true || sum["errors"] != float64(1) || !strings.Contains(r.stdout, c.want) {
			t.Fatalf("%s --json: exit %d, stdout %q", c.name, r.code, r.stdout)
		}
	}
}

func TestCLI_RequestJSONWhenTheStoreIsUnreachable(t *testing.T) {
	r := cliRun(t, 30*time.Second, "request", "--location", "redis://127.0.0.1:1", "--channel", "match", "--json")
	l := jsonLines(t, r.stdout)
	if r.code != 1 || len(l) != 1 || l[0]["summary"] != true || !strings.Contains(l[0]["error"].(string), "127.0.0.1:1") {
		t.Fatalf("unreachable store --json: exit %d stdout %q", r.code, r.stdout)
	}
}

func TestCLI_RequestEmptyMeshInRedisFailsAtOnce(t *testing.T) {
	redis := locationtest.StartRedis(t)
	start := time.Now()
	r := cliRun(t, 30*time.Second, "request", "--location", redis.URL(), "--mesh", "nobody", "--channel", "match", "--wait", "20s")
	if r.code != 1 || !strings.Contains(r.stdout, `no node of mesh \"nobody\"`) {
		t.Fatalf("empty mesh: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if d := time.Since(start); d >= 20*time.Second {
		t.Fatalf("empty mesh took %v: it waited for --wait", d)
	}
	r = cliRun(t, 30*time.Second, "request", "--location", redis.URL(), "--mesh", "nobody", "--channel", "match", "--json")
	if l := jsonLines(t, r.stdout); r.code != 1 || len(l) != 1 || l[0]["summary"] != true {
		t.Fatalf("empty mesh --json: exit %d stdout %q", r.code, r.stdout)
	}
}

func TestCLI_RequestSummaryByDefaultLinesOnRequest(t *testing.T) {
	a := cliStartNode(t, "--rid", "a", "--server", "match=300", "--log-format", "console", "--log-level", "info")
	// A bare HOST:PORT works for --peer.
	bare := strings.TrimPrefix(a.endpoint, "tcp://")
	r := cliRun(t, 20*time.Second, "request", "--peer", bare+"#a", "--channel", "match", "--count", "10")
	if r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("default: exit %d stdout %q: want only the summary", r.code, r.stdout)
	}
	if f := cliFields(r.stdout); f["by_rid"] != "a:10(100.0%,weight=300)" {
		t.Fatalf("by_rid %q: want calls, share and weight", f["by_rid"])
	}
	r = cliRun(t, 20*time.Second, "request", "--peer", bare, "--channel", "match", "--count", "10", "--lines")
	if s := parseSummary(t, r.stdout); r.code != 0 || strings.Count(r.stdout, "ok rid=a\n") != 10 || s.byRID["a"] != 10 {
		t.Fatalf("--lines: exit %d stdout %q", r.code, r.stdout)
	}
	r = cliRun(t, 20*time.Second, "request", "--peer", bare, "--channel", "match", "--count", "3", "--lines", "--json")
	if l := jsonLines(t, r.stdout); r.code != 0 || len(l) != 4 || l[0]["rid"] != "a" || l[3]["summary"] != true {
		t.Fatalf("--lines --json: exit %d stdout %q", r.code, r.stdout)
	}
	// What a bad endpoint should look like.
	r = cliRun(t, 20*time.Second, "request", "--peer", "udp://127.0.0.1:1", "--channel", "match")
	if r.code != 2 || !strings.Contains(oneLineStderr(t, r), "want tcp://HOST:PORT") {
		t.Fatalf("bad endpoint: exit %d stderr %q", r.code, r.stderr)
	}
	// Console logs to a pipe carry no colour codes.
	cliWait(t, "a console log line", 10*time.Second, func() bool { return strings.Contains(a.stderr.String(), "INF") })
	if s := a.stderr.String(); strings.Contains(s, "\x1b[") {
		t.Fatalf("console logs to a pipe contain ANSI escapes: %q", s)
	}
}

func TestCLI_ErrorsUseCommandLineWords(t *testing.T) {
	r := cliRun(t, 20*time.Second, "run", "--rid-prefix", "x")
	msg := oneLineStderr(t, r)
	if r.code != 2 || strings.Contains(msg, "SetRoutingIDPrefix") || !strings.Contains(msg, "--location") {
		t.Fatalf("exit %d stderr %q: want CLI words", r.code, msg)
	}
	r = cliRun(t, 20*time.Second, "request", "--peer", "127.0.0.1:1", "--channel", "match", "--wait", "300ms")
	if r.code != 1 || strings.Contains(r.stdout, "zgtcp") || !strings.Contains(r.stdout, "tcp://127.0.0.1:1") {
		t.Fatalf("exit %d stdout %q: want the tcp:// endpoint named", r.code, r.stdout)
	}
}

func TestCLI_UndrainReturnsToSelection(t *testing.T) {
	a := cliStartNode(t, "--rid", "a", "--server", "match")
	if r := cliRun(t, 20*time.Second, "drain", "--admin", a.admin, "--timeout", "5s"); r.code != 0 {
		t.Fatalf("drain: %d %q", r.code, r.stderr)
	}
	r := cliRun(t, 20*time.Second, "request", "--peer", a.peerArg(), "--channel", "match", "--wait", "1s")
	if r.code != 1 || !strings.Contains(r.stdout, "Draining") {
		t.Fatalf("request to a drained node: exit %d stdout %q", r.code, r.stdout)
	}
	r = cliRun(t, 20*time.Second, "undrain", "--admin", a.admin)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "undrained mesh=default" {
		t.Fatalf("undrain: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var st cliStatus
	cliGetJSON(t, a.admin, "/status", &st)
	if st.State != "ready" {
		t.Fatalf("state after undrain %q", st.State)
	}
	r = cliRun(t, 20*time.Second, "request", "--peer", a.peerArg(), "--channel", "match", "--count", "5")
	if s := parseSummary(t, r.stdout); r.code != 0 || s.byRID["a"] != 5 {
		t.Fatalf("request after undrain: exit %d stdout %q", r.code, r.stdout)
	}
}

func TestCLI_TreeShowsRunningHandlersAndMetricsDepartures(t *testing.T) {
	a := cliStartNode(t, "--rid", "a", "--server", "match")
	req := cliStart(t, "request", "--peer", a.peerArg(), "--channel", "match", "--packet", "sleep", "--data", "2s",
		"--count", "2", "--concurrency", "2")
	cliWait(t, "the tree shows 2 running handlers", 15*time.Second, func() bool {
		r := cliRun(t, 10*time.Second, "tree", "--admin", a.admin)
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.Contains(l, "channel:match") && strings.Contains(l, "running=2") {
				return true
			}
		}
		return false
	})
	if code := req.wait(20 * time.Second); code != 0 {
		t.Fatalf("sleep requests exit %d", code)
	}
	// The request tool has left; departures and losses are counted apart
	// (which one a clean exit lands in is checked in
	// TestPeers_GoodbyeCountsAsDepartedNotLost).
	cliWait(t, "the request tool's exit counted", 10*time.Second, func() bool {
		var st cliStatus
		cliGetJSON(t, a.admin, "/status", &st)
		return st.Counters["peers_departed"]+st.Counters["peers_lost"] >= 1
	})
	resp, err := http.Get("http://" + a.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), `zlink_runtime_events_total{event="peers_departed",mesh="default"}`) {
		t.Fatal("metrics lack peers_departed")
	}
}
