package test

// Black-box tests of the zlink-node command line (issue 6): they build the
// binary, run real processes on loopback and parse what they print.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// chiSquare01 is the 0.1% critical value of chi-square with 2 degrees of
// freedom: a correct weighted selection fails this test once in 1000 runs.
const chiSquare01df2 = 13.82

func TestCLI_WeightedDistributionAndRuntimeWeight(t *testing.T) {
	weights := map[string]int{"w1": 100, "w2": 300, "w3": 600}
	var nodes []*cliNode
	var peers []string
	for _, rid := range []string{"w1", "w2", "w3"} {
		n := cliStartNode(t, "--rid", rid, "--server", "match="+strconv.Itoa(weights[rid]))
		nodes = append(nodes, n)
		peers = append(peers, "--peer", n.peerArg())
	}
	request := func(count int) cliSummary {
		t.Helper()
		args := append([]string{"request", "--channel", "match", "--count", strconv.Itoa(count), "--concurrency", "8", "--seed", "7"}, peers...)
		r := cliRun(t, 30*time.Second, args...)
		if r.code != 0 {
			t.Fatalf("request exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		return parseSummary(t, r.stdout)
	}

	const n = 600
	s := request(n)
	if s.ok != n || s.errors != 0 {
		t.Fatalf("summary ok=%d errors=%d, want ok=%d", s.ok, s.errors, n)
	}
	chi := 0.0
	for rid, w := range weights {
		exp := float64(n) * float64(w) / 1000
		d := float64(s.byRID[rid]) - exp
		chi += d * d / exp
	}
	if chi > chiSquare01df2 {
		t.Fatalf("distribution %v does not match weights %v (chi-square %.2f > %.2f)", s.byRID, weights, chi, chiSquare01df2)
	}

	// weight → 0 removes w3 (the heaviest) from new selection.
	r := cliRun(t, 10*time.Second, "weight", "--admin", nodes[2].admin, "match", "0")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok ") {
		t.Fatalf("weight 0: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var st cliStatus
	cliGetJSON(t, nodes[2].admin, "/status", &st)
	if len(st.Channels) != 1 || st.Channels[0].Weight == nil || *st.Channels[0].Weight != 0 {
		t.Fatalf("status channels after weight 0: %+v", st.Channels)
	}
	s = request(200)
	if s.ok != 200 || s.byRID["w3"] != 0 {
		t.Fatalf("after weight 0: %+v, want 200 ok and none on w3", s)
	}

	// Out of range: non-zero exit and a message naming the problem.
	r = cliRun(t, 10*time.Second, "weight", "--admin", nodes[0].admin, "match", "10001")
	if r.code == 0 || !strings.Contains(oneLineStderr(t, r), "weight outside 0..10000") {
		t.Fatalf("weight 10001: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestCLI_DrainFinishesInFlightWork(t *testing.T) {
	node := cliStartNode(t, "--rid", "d1", "--server", "match")
	const slow = 4
	req := cliStart(t, "request", "--peer", node.peerArg(), "--channel", "match", "--packet", "sleep", "--data", "700ms",
		"--count", strconv.Itoa(slow), "--concurrency", strconv.Itoa(slow))
	cliWait(t, "slow requests in flight on d1", 10*time.Second, func() bool {
		var st cliStatus
		cliGetJSON(t, node.admin, "/status", &st)
		return st.Inflight > 0
	})
	r := cliRun(t, 20*time.Second, "drain", "--admin", node.admin, "--timeout", "10s")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "drained") {
		t.Fatalf("drain: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var st cliStatus
	cliGetJSON(t, node.admin, "/status", &st)
	if st.State != "draining" || st.Inflight != 0 {
		t.Fatalf("after drain: state %q inflight %d, want draining and 0", st.State, st.Inflight)
	}
	// Every in-flight request finished with a reply.
	var lines []string
	for l := range req.lines {
		lines = append(lines, l)
	}
	if code := req.wait(10 * time.Second); code != 0 {
		t.Fatalf("slow requests exit %d: %v; stderr %s", code, lines, req.stderr.String())
	}
	if s := parseSummary(t, strings.Join(lines, "\n")); s.ok != slow {
		t.Fatalf("slow requests: %+v", s)
	}
	if code := cliGetJSON(t, node.admin, "/readyz", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining = %d, want 503", code)
	}
	// A drained node takes no new selection: the only Server is gone.
	r = cliRun(t, 20*time.Second, "request", "--peer", node.peerArg(), "--channel", "match", "--wait", "2s")
	if r.code == 0 || !strings.Contains(r.stdout, "error no_target") {
		t.Fatalf("request to a drained node: exit %d stdout %q", r.code, r.stdout)
	}
	// SIGINT: drain (already done), shutdown, exit 0.
	node.signal(syscall.SIGINT)
	if code := node.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit after SIGINT = %d; stderr %s", code, node.stderr.String())
	}
}

func TestCLI_KillNineReroutes(t *testing.T) {
	var nodes []*cliNode
	var peers []string
	for _, rid := range []string{"k1", "k2", "k3"} {
		n := cliStartNode(t, "--rid", rid, "--server", "match")
		nodes = append(nodes, n)
		peers = append(peers, "--peer", n.peerArg())
	}
	nodes[0].signal(syscall.SIGKILL)
	nodes[0].wait(10 * time.Second)
	args := append([]string{"request", "--channel", "match", "--count", "60", "--concurrency", "4", "--wait", "3s"}, peers...)
	var last cliResult
	cliWait(t, "requests succeed on the survivors", 30*time.Second, func() bool {
		last = cliRun(t, 30*time.Second, args...)
		return last.code == 0
	})
	s := parseSummary(t, last.stdout)
	if s.ok != 60 || s.byRID["k1"] != 0 || s.byRID["k2"] == 0 || s.byRID["k3"] == 0 {
		t.Fatalf("after kill -9 of k1: %+v", s)
	}
}

func TestCLI_ObjectClientsNotRequired(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	a := cliStartNode(t, "--rid", "oa", "--object", "client", "--location", loc)
	b := cliStartNode(t, "--rid", "ob", "--object", "client", "--location", loc, "--peer", a.peerArg())
	c := cliStartNode(t, "--rid", "oc", "--object", "client", "--location", loc, "--server", "match", "--peer", a.peerArg())
	want := map[*cliNode]string{b: "NotRequired", c: "Ready"}
	for n, state := range want {
		var st cliStatus
		cliWait(t, n.rid+" shows oa as "+state, 10*time.Second, func() bool {
			cliGetJSON(t, n.admin, "/status", &st)
			return st.peerState("oa") == state
		})
	}
	// NotRequired is not a failure: the text status says so too.
	r := cliRun(t, 10*time.Second, "status", "--admin", b.admin)
	if r.code != 0 || !strings.Contains(r.stdout, "peer rid=oa state=NotRequired") {
		t.Fatalf("status of ob: exit %d\n%s", r.code, r.stdout)
	}
}

func TestCLI_AdminAPIAndTree(t *testing.T) {
	a := cliStartNode(t, "--rid", "ta", "--server", "match=250", "--client", "lobby")
	b := cliStartNode(t, "--rid", "tb", "--server", "lobby", "--peer", a.peerArg())
	var st cliStatus
	cliWait(t, "ta sees tb ready", 10*time.Second, func() bool {
		cliGetJSON(t, a.admin, "/status", &st)
		return st.peerState("tb") == "Ready"
	})
	if st.Mesh != "default" || st.RID != "ta" || st.Generation == 0 || st.State != "ready" || st.Counters == nil {
		t.Fatalf("status: %+v", st)
	}
	roles := map[string]string{}
	for _, ch := range st.Channels {
		roles[ch.Name] = ch.Role
		if ch.Weight == nil {
			t.Fatalf("channel %s without weight", ch.Name)
		}
	}
	if roles["match"] != "server" || roles["lobby"] != "client" {
		t.Fatalf("channel roles %v", roles)
	}

	// JSON tree with the documented fields.
	var raw map[string]any
	cliGetJSON(t, a.admin, "/tree", &raw)
	for _, k := range []string{"path", "kind", "state", "restarts", "mailbox", "children"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("tree JSON lacks %q: %v", k, raw)
		}
	}
	for _, k := range []string{"depth", "bytes", "max_messages", "max_bytes"} {
		if _, ok := raw["mailbox"].(map[string]any)[k]; !ok {
			t.Fatalf("tree mailbox lacks %q", k)
		}
	}
	// Text tree: the MeshNode, the peer and the channel actors.
	r := cliRun(t, 10*time.Second, "tree", "--admin", a.admin)
	if r.code != 0 {
		t.Fatalf("tree exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"/mesh:default meshnode running", "/peer:tb", " peer running", "/channel:match channel running", "mailbox="} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("tree lacks %q:\n%s", want, r.stdout)
		}
	}
	r = cliRun(t, 10*time.Second, "tree", "--admin", a.admin, "--json")
	if r.code != 0 || !json.Valid([]byte(r.stdout)) {
		t.Fatalf("tree --json: exit %d, %q", r.code, r.stdout)
	}

	// Health, readiness and metrics.
	if code := cliGetJSON(t, a.admin, "/healthz", nil); code != http.StatusOK {
		t.Fatalf("/healthz = %d", code)
	}
	if code := cliGetJSON(t, a.admin, "/readyz", nil); code != http.StatusOK {
		t.Fatalf("/readyz = %d", code)
	}
	r = cliRun(t, 20*time.Second, "request", "--peer", a.peerArg(), "--channel", "match", "--count", "5", "--data", "x")
	if r.code != 0 {
		t.Fatalf("request: %d %s", r.code, r.stdout)
	}
	resp, err := http.Get("http://" + a.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw2, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw2)
	for _, want := range []string{
		`zlink_peers{mesh="default",state="Ready"} 1`,
		`zlink_builtin_handled_total{channel="match",mesh="default",packet="echo"} 5`,
		`zlink_channel_weight{channel="match",mesh="default"} 250`,
		`zlink_mailbox_depth{kind="meshnode"}`,
		`zlink_call_latency_seconds_bucket{mesh="default",le="+Inf"}`,
		`zlink_calls_total{mesh="default"}`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
	// SIGTERM: graceful, exit 0.
	b.signal(syscall.SIGTERM)
	if code := b.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit after SIGTERM = %d; stderr %s", code, b.stderr.String())
	}
}

func TestCLI_ConfigFileSeveralMeshes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "node.yaml")
	writeFile(t, cfg, `
log_level: warn
meshes:
  - name: game
    rid: g1
    servers:
      - {channel: match, weight: 700}
  - name: chat
    rid: c1
    clients: [rooms]
    liveness: {interval: 200ms, max_gap: 4, last_heard: 2s}
`)
	p := cliStart(t, "run", "--config", cfg)
	line := p.nextLine(20 * time.Second)
	f := cliFields(line)
	if f["mesh"] != "game,chat" || f["rid"] != "g1,c1" || f["admin"] == "" {
		t.Fatalf("ready line %q", line)
	}
	var st cliStatus
	if code := cliGetJSON(t, f["admin"], "/status?mesh=chat", &st); code != 200 || st.Mesh != "chat" || st.RID != "c1" {
		t.Fatalf("status?mesh=chat: %d %+v", code, st)
	}
	r := cliRun(t, 10*time.Second, "weight", "--admin", f["admin"], "--mesh", "game", "match", "5")
	if r.code != 0 || !strings.Contains(r.stdout, "mesh=game channel=match weight=5") {
		t.Fatalf("weight --mesh game: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestCLI_BadFlagsAndConfigsExit2(t *testing.T) {
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.yaml")
	writeFile(t, dup, "meshes:\n  - name: a\n  - name: a\n")
	unknown := filepath.Join(dir, "unknown.yaml")
	writeFile(t, unknown, "meshes:\n  - name: a\n    colour: blue\n")
	weightCfg := filepath.Join(dir, "weight.yaml")
	writeFile(t, weightCfg, "meshes:\n  - name: a\n    servers: [{channel: match, weight: -1}]\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "--bogus"}, "unknown flag: --bogus"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"weight out of range", []string{"run", "--server", "match=20000"}, "weight outside 0..10000: mesh=default channel=match"},
		{"weight not a number", []string{"run", "--server", "match=lots"}, "weight must be an integer"},
		{"object role without redis", []string{"run", "--object", "client"}, "Location Store"},
		{"rid prefix without redis", []string{"run", "--rid-prefix", "game"}, "Location Store"},
		{"bad object role", []string{"run", "--object", "maybe"}, `--object "maybe"`},
		{"bad location", []string{"run", "--location", "etcd://x"}, `--location "etcd://x"`},
		{"bad log format", []string{"run", "--log-format", "xml"}, `--log-format "xml"`},
		{"duplicate MeshName", []string{"run", "--config", dup}, "MeshName registered twice in this process: mesh=a"},
		{"unknown config key", []string{"run", "--config", unknown}, "field colour not found"},
		{"config weight", []string{"run", "--config", weightCfg}, "weight outside 0..10000"},
		{"config and mesh flags", []string{"run", "--config", dup, "--server", "x"}, "cannot be combined"},
		{"missing config", []string{"run", "--config", filepath.Join(dir, "nope.yaml")}, "config file"},
		{"request without channel", []string{"request", "--peer", "tcp://127.0.0.1:1"}, "--channel"},
		{"request without topology", []string{"request", "--channel", "match"}, "exactly one of --location"},
		{"weight not a number", []string{"weight", "--admin", "127.0.0.1:1", "match", "heavy"}, `weight "heavy"`},
		{"weight args", []string{"weight", "--admin", "127.0.0.1:1", "match"}, "accepts 2 arg(s)"},
		{"bench unknown", []string{"bench", "--quick", "nope"}, "unknown bench nope"},
		{"admin reachable from other hosts without a token", []string{"run", "--admin", "0.0.0.0:0"}, "--admin-token-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := cliRun(t, 20*time.Second, tc.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if line := oneLineStderr(t, r); !strings.Contains(line, tc.want) {
				t.Fatalf("stderr %q does not name the problem (%q)", line, tc.want)
			}
			if strings.Contains(r.stdout, "ready ") {
				t.Fatalf("printed a ready line: %q", r.stdout)
			}
		})
	}
}

func TestCLI_Demo(t *testing.T) {
	r := cliRun(t, 30*time.Second, "demo")
	if r.code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"step 1: weighted select-one", "weight 0", "drain", "kill", "step 5: Spots", "ok   spots", "demo: ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestCLI_AutomaticTopology(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	a := cliStartNode(t, "--rid-prefix", "auto", "--location", loc, "--server", "match")
	b := cliStartNode(t, "--rid-prefix", "auto", "--location", loc, "--server", "match")
	var last cliResult
	cliWait(t, "automatic request reaches both servers", 20*time.Second, func() bool {
		last = cliRun(t, 30*time.Second, "request", "--location", loc, "--channel", "match", "--count", "40", "--concurrency", "4", "--wait", "5s")
		if last.code != 0 {
			return false
		}
		s := parseSummary(t, last.stdout)
		return s.byRID[a.rid] > 0 && s.byRID[b.rid] > 0
	})
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The Location Store over TLS from the command line: rediss:// with the
// CA and a client certificate.
func TestCLI_LocationOverTLS(t *testing.T) {
	certs := locationtest.GenerateCerts(t)
	redis := locationtest.StartRedisTLS(t, locationtest.TLSOptions{Certs: certs})
	loc := "rediss://" + redis.Addr() + "?ca=" + certs.CAFile + "&cert=" + certs.ClientCertFile + "&key=" + certs.ClientKeyFile
	a := cliStartNode(t, "--mesh", "tls", "--rid-prefix", "s", "--location", loc, "--server", "match")
	b := cliStartNode(t, "--mesh", "tls", "--rid-prefix", "s", "--location", loc, "--server", "match")
	r := cliRun(t, 30*time.Second, "request", "--location", loc, "--mesh", "tls", "--channel", "match", "--count", "20")
	if r.code != 0 {
		t.Fatalf("request over a TLS Location Store: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sum := parseSummary(t, r.stdout)
	if sum.ok != 20 || sum.byRID[a.rid]+sum.byRID[b.rid] != 20 {
		t.Fatalf("summary %+v", sum)
	}
	// A client that does not trust the server's CA is refused, and the
	// error does not print the URL (it may hold a password).
	bad := "rediss://u:secret@" + redis.Addr() + "?ca=" + certs.OtherCAFile
	r = cliRun(t, 30*time.Second, "run", "--mesh", "tls", "--rid-prefix", "s", "--location", bad)
	if r.code == 0 || strings.Contains(r.stderr, "secret") || !strings.Contains(r.stderr, redis.Addr()) {
		t.Fatalf("untrusted CA: exit %d, stderr %q", r.code, r.stderr)
	}
}

// With an admin token, `weight` works with the token file and is refused
// without it; read-only commands need nothing.
func TestCLI_AdminToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("cli-test-admin-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := cliStartNode(t, "--rid", "tok", "--server", "match", "--admin-token-file", tokenFile)
	if r := cliRun(t, 20*time.Second, "weight", "--admin", n.admin, "match", "5"); r.code == 0 || !strings.Contains(r.stderr, "admin token") {
		t.Fatalf("weight without the token: exit %d stderr %q", r.code, r.stderr)
	}
	if r := cliRun(t, 20*time.Second, "weight", "--admin", n.admin, "--admin-token-file", tokenFile, "match", "5"); r.code != 0 {
		t.Fatalf("weight with the token: exit %d stderr %q", r.code, r.stderr)
	}
	if r := cliRun(t, 20*time.Second, "status", "--admin", n.admin); r.code != 0 || !strings.Contains(r.stdout, "match") {
		t.Fatalf("status without a token: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}
