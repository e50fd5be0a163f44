package test

// Black-box tests of Spots from the command line: `run --object server`
// hosts the built-in counter kind, `spot` calls it through an ephemeral
// Object Client node, GET /spots and `tree` show what a node hosts.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

func TestCLISpot_CounterOnTwoObjectServers(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	a := cliStartNode(t, "--mesh", "game", "--rid-prefix", "os", "--location", loc, "--object", "server")
	b := cliStartNode(t, "--mesh", "game", "--rid-prefix", "os", "--location", loc, "--object", "server")
	nodes := map[string]*cliNode{a.rid: a, b.rid: b}
	call := func(args ...string) cliResult {
		return spotCall(t, loc, append([]string{"--mesh", "game"}, args...)...)
	}

	// The first call activates player-1 on one of the two.
	owner := spotOK(t, call("counter", "player-1", "add", "5"), "5")
	if nodes[owner] == nil {
		t.Fatalf("owner %q is neither %s nor %s", owner, a.rid, b.rid)
	}
	other := a
	if owner == a.rid {
		other = b
	}
	// The same Spot keeps its owner and its state.
	if rid := spotOK(t, call("counter", "player-1", "add", "2"), "7"); rid != owner {
		t.Fatalf("add 2 answered by %s, want the owner %s", rid, owner)
	}
	if rid := spotOK(t, call("counter", "player-1", "get"), "7"); rid != owner {
		t.Fatalf("get answered by %s, want the owner %s", rid, owner)
	}
	// Through the other Object Server (--peer): it routes the call, the
	// line names the owner.
	if rid := spotOK(t, call("--peer", other.peerArg(), "counter", "player-1", "get"), "7"); rid != owner {
		t.Fatalf("get via %s answered by %s, want the owner %s", other.rid, rid, owner)
	}
	// --peer without #RID: the RID is learnt from the handshake.
	if rid := spotOK(t, call("--peer", other.endpoint, "counter", "player-1", "add", "1"), "8"); rid != owner {
		t.Fatalf("add via %s answered by %s, want the owner %s", other.endpoint, rid, owner)
	}

	// Errors: one line `error <code> <message>`, exit 1.
	spotErr(t, call("counter", "player-1", "mul", "3"), "unknown_packet", `"mul"`)
	spotErr(t, call("counter", "player-1", "add", "lots"), "handler", "decimal integer")
	spotErr(t, call("counter", "player-1", "add", "9223372036854775807"), "handler", "overflows int64")
	spotOK(t, call("counter", "player-1", "get"), "8") // the refused add changed nothing
	spotErr(t, call("--peer", other.endpoint+"#wrong-rid", "counter", "player-1", "get"), "no_target", "wrong_rid")

	// GET /spots: the owner has the one counter Spot and lists it.
	var sp cliSpots
	if code := cliGetJSON(t, nodes[owner].admin, "/spots?kind=counter&list=10", &sp); code != http.StatusOK {
		t.Fatalf("GET /spots = %d", code)
	}
	m := sp.mesh(t, "game")
	if !m.Enabled || m.Stats == nil || m.Stats.Role != "server" || !m.Stats.LeaseValid || m.Stats.LeaseGeneration == 0 {
		t.Fatalf("owner /spots: %+v", m)
	}
	if k := m.Stats.kind("counter"); k == nil || k.Active != 1 || k.Activations != 1 {
		t.Fatalf("owner /spots kinds: %+v", m.Stats.Kinds)
	}
	if m.List == nil || m.List.Kind != "counter" || m.List.Limit != 10 || strings.Join(m.List.IDs, ",") != "player-1" || m.List.Error != "" {
		t.Fatalf("owner /spots list: %+v", m.List)
	}
	// The other one hosts none; without ?kind it lists nothing.
	sp = cliSpots{}
	cliGetJSON(t, other.admin, "/spots", &sp)
	m = sp.mesh(t, "game")
	if k := m.Stats.kind("counter"); k == nil || k.Active != 0 || m.List != nil {
		t.Fatalf("non-owner /spots: %+v", m)
	}
	if code := cliGetJSON(t, other.admin, "/spots?list=3", nil); code != http.StatusBadRequest {
		t.Fatalf("GET /spots?list=3 without kind = %d, want 400", code)
	}

	// The tree folds the kind: one line with children=1, no line per Spot.
	r := cliRun(t, 10*time.Second, "tree", "--admin", nodes[owner].admin)
	if r.code != 0 {
		t.Fatalf("tree: exit %d %s", r.code, r.stderr)
	}
	line := ""
	for l := range strings.SplitSeq(r.stdout, "\n") {
		if strings.Contains(l, "/spots/counter ") {
			line = l
		}
		if strings.Contains(l, "player-1") {
			t.Fatalf("tree lists a Spot: %q", l)
		}
	}
	if !strings.Contains(line, " spot-kind running ") || !strings.HasSuffix(line, " children=1") {
		t.Fatalf("tree line of the counter kind %q, want spot-kind running … children=1:\n%s", line, r.stdout)
	}
	r = cliRun(t, 10*time.Second, "tree", "--admin", nodes[owner].admin, "--json")
	var tree cliTreeNode
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tree) != nil {
		t.Fatalf("tree --json: exit %d %q", r.code, r.stdout)
	}
	k := tree.find(func(n *cliTreeNode) bool { return strings.HasSuffix(n.Path, "/spots/counter") })
	if k == nil || k.Kind != "spot-kind" || k.Folded != 1 || len(k.Children) != 0 {
		t.Fatalf("tree --json counter kind: %+v", k)
	}
}

func TestCLISpot_NoObjectServer(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	// An empty mesh: nobody can host.
	spotErr(t, spotCall(t, loc, "--mesh", "empty", "counter", "player-1", "add", "5"), "no_target", "no Object Server")
	// A mesh with an Object Client only.
	c := cliStartNode(t, "--mesh", "game", "--rid-prefix", "oc", "--location", loc, "--object", "client")
	spotErr(t, spotCall(t, loc, "--mesh", "game", "counter", "player-1", "add", "5"), "no_target", "no Object Server")
	// The Object Client runs the Spot runtime without kinds.
	var sp cliSpots
	if code := cliGetJSON(t, c.admin, "/spots?kind=counter", &sp); code != http.StatusOK {
		t.Fatalf("GET /spots = %d", code)
	}
	m := sp.mesh(t, "game")
	if !m.Enabled || m.Stats == nil || m.Stats.Role != "client" || len(m.Stats.Kinds) != 0 || m.List == nil || m.List.Error == "" {
		t.Fatalf("Object Client /spots: %+v (list %+v)", m, m.List)
	}
	// --peer changes nothing: without an Object Server nobody hosts.
	spotErr(t, spotCall(t, loc, "--mesh", "game", "--peer", c.peerArg(), "counter", "player-1", "get"), "no_target", "no Object Server")
}

func TestCLISpot_Usage(t *testing.T) {
	n := cliStartNode(t, "--rid", "plain")
	var sp cliSpots
	cliGetJSON(t, n.admin, "/spots", &sp)
	if m := sp.mesh(t, "default"); m.Enabled || m.Stats != nil {
		t.Fatalf("object role none /spots: %+v", m)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"spot", "counter", "p", "get"}, "--location"},
		{[]string{"spot", "--location", "etcd://x", "counter", "p", "get"}, `--location "etcd://x"`},
		{[]string{"spot", "--location", "redis://127.0.0.1:1", "counter", "p"}, "accepts between 3 and 4 arg(s)"},
		{[]string{"spot", "--location", "redis://127.0.0.1:1", "--peer", "nope", "counter", "p", "get"}, "--peer"},
		{[]string{"spot", "--location", "redis://127.0.0.1:1", "--timeout", "0s", "counter", "p", "get"}, "--timeout"},
	}
	for _, tc := range cases {
		r := cliRun(t, 10*time.Second, tc.args...)
		if r.code != 2 || !strings.Contains(oneLineStderr(t, r), tc.want) {
			t.Fatalf("%v: exit %d stderr %q, want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
