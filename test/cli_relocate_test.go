package test

// Black-box tests of Host Relocate, Spot moves and drains with Spots from
// the command line: real zlink-node processes on a real redis-server. The
// built-in counter kind is persistent, so its Spots move with their state.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// relocate moves the counter to the other Object Server with its state;
// spot-move brings it back; the token protects both.
func TestCLIRelocate_MovesCounterWithState(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	tok := relocateToken(t)
	a, b := relocateServers(t, loc, tok)
	nodes := map[string]*cliNode{a.rid: a, b.rid: b}
	call := func(args ...string) cliResult {
		return spotCall(t, loc, append([]string{"--mesh", "game"}, args...)...)
	}

	owner := spotOK(t, call("counter", "player-1", "add", "5"), "5")
	from := nodes[owner]
	if from == nil {
		t.Fatalf("owner %q is neither %s nor %s", owner, a.rid, b.rid)
	}
	to := a
	if from == a {
		to = b
	}

	// Without the token: refused, nothing moves.
	wantAdminError(t, "unauthorized", "admin token", "relocate", "--admin", from.admin, "--to", to.rid)
	wantAdminError(t, "unauthorized", "admin token", "spot-move", "--admin", from.admin, "--kind", "counter", "--id", "player-1", "--to", to.rid)
	if rid := spotOK(t, call("counter", "player-1", "get"), "5"); rid != owner {
		t.Fatalf("after refused relocate: get on %s, want %s", rid, owner)
	}
	// To an RID that is no ready peer: refused.
	wantAdminError(t, "no_target", "os-nobody", "relocate", "--admin", from.admin, "--admin-token-file", tok, "--to", "os-nobody")

	line, r := adminLine(t, "relocate", "--admin", from.admin, "--admin-token-file", tok, "--to", to.rid)
	want := fmt.Sprintf("relocated moved=1 failed=0 other=0 mesh=game from=%s to=%s", from.rid, to.rid)
	if r.code != 0 || line != want {
		t.Fatalf("relocate: exit %d stdout %q, want %q; stderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	if rid := spotOK(t, call("counter", "player-1", "get"), "5"); rid != to.rid {
		t.Fatalf("after relocate: get answered by %s, want %s", rid, to.rid)
	}
	// Relocating again moves nothing.
	if line, r := adminLine(t, "relocate", "--admin", from.admin, "--admin-token-file", tok, "--to", to.rid); r.code != 0 || !strings.HasPrefix(line, "relocated moved=0 failed=0 other=0 ") {
		t.Fatalf("second relocate: exit %d stdout %q", r.code, r.stdout)
	}

	// spot-move brings it back, state kept.
	line, r = adminLine(t, "spot-move", "--admin", to.admin, "--admin-token-file", tok, "--kind", "counter", "--id", "player-1", "--to", from.rid)
	want = fmt.Sprintf("moved kind=counter id=player-1 from=%s to=%s mesh=game", to.rid, from.rid)
	if r.code != 0 || line != want {
		t.Fatalf("spot-move: exit %d stdout %q, want %q; stderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	if rid := spotOK(t, call("counter", "player-1", "add", "1"), "6"); rid != from.rid {
		t.Fatalf("after spot-move: add answered by %s, want %s", rid, from.rid)
	}
	// A Spot not active on the node, an unknown kind: refused.
	wantAdminError(t, "no_target", "not active", "spot-move", "--admin", to.admin, "--admin-token-file", tok, "--kind", "counter", "--id", "player-1", "--to", from.rid)
	wantAdminError(t, "unknown_kind", "nokind", "spot-move", "--admin", from.admin, "--admin-token-file", tok, "--kind", "nokind", "--id", "x", "--to", to.rid)

	// Usage: exit 2, one line on stderr.
	for _, args := range [][]string{
		{"relocate", "--admin", from.admin},
		{"spot-move", "--admin", from.admin, "--kind", "counter", "--to", to.rid},
		{"relocate", "--admin", from.admin, "--to", to.rid, "--timeout", "0s"},
	} {
		if r := cliRun(t, 10*time.Second, args...); r.code != 2 || r.stdout != "" {
			t.Fatalf("%v: exit %d stdout %q stderr %q, want 2", args, r.code, r.stdout, r.stderr)
		} else {
			oneLineStderr(t, r)
		}
	}
}

// A node with a manual topology (fixed --rid) refuses Host Relocate before
// anything changes.
func TestCLIRelocate_ManualTopologyBlocked(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	m := cliStartNode(t, "--mesh", "game", "--rid", "manual-1", "--location", loc, "--object", "server")
	if rid := spotOK(t, spotCall(t, loc, "--mesh", "game", "--peer", m.peerArg(), "counter", "player-1", "add", "3"), "3"); rid != "manual-1" {
		t.Fatalf("owner %s, want manual-1", rid)
	}
	line := wantAdminError(t, "blocked", "Blocked/ManualTopologyUnsupported", "relocate", "--admin", m.admin, "--to", "anyone")
	if !strings.Contains(line, "manual-1") {
		t.Fatalf("blocked line %q does not name the node", line)
	}
	// Nothing changed: the Spot is still there with its state.
	if rid := spotOK(t, spotCall(t, loc, "--mesh", "game", "--peer", m.peerArg(), "counter", "player-1", "get"), "3"); rid != "manual-1" {
		t.Fatalf("after blocked relocate: owner %s", rid)
	}
	var sp cliSpots
	cliGetJSON(t, m.admin, "/spots", &sp)
	if k := sp.mesh(t, "game").Stats.kind("counter"); k == nil || k.Active != 1 {
		t.Fatalf("after blocked relocate: /spots %+v", sp)
	}

	// A node without the Spot runtime (object role none).
	plain := cliStartNode(t, "--rid", "plain")
	wantAdminError(t, "not_enabled", "spot", "relocate", "--admin", plain.admin, "--to", "anyone")
}

// Draining an Object Server hands its counters to the other one, state
// kept; drain reports how many moved.
func TestCLIRelocate_DrainMovesCounters(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	a, b := relocateServers(t, loc, "")
	nodes := map[string]*cliNode{a.rid: a, b.rid: b}
	call := func(args ...string) cliResult {
		return spotCall(t, loc, append([]string{"--mesh", "game"}, args...)...)
	}

	// Counters until the first node owns at least one (placement spreads
	// them once a caller sees both servers: the first callers may see only
	// the one that started first, so keep going until a deadline).
	owners := map[string]string{}
	values := map[string]string{}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		id := fmt.Sprintf("player-%d", i)
		v := fmt.Sprint(10 + i)
		owners[id] = spotOK(t, call("counter", id, "add", v), v)
		values[id] = v
		if nodes[owners[id]] == nil {
			t.Fatalf("%s owned by %q", id, owners[id])
		}
		if i >= 2 && countOwned(owners, a.rid) > 0 {
			break
		}
	}
	onA := countOwned(owners, a.rid)
	if onA == 0 {
		t.Fatalf("no counter landed on %s: %v", a.rid, owners)
	}

	line, r := adminLine(t, "drain", "--admin", a.admin, "--timeout", "15s")
	want := fmt.Sprintf("drained mesh=game moved_spots=%d", onA)
	if r.code != 0 || line != want {
		t.Fatalf("drain: exit %d stdout %q, want %q; stderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	for id, v := range values {
		if rid := spotOK(t, call("counter", id, "get"), v); rid != b.rid {
			t.Fatalf("after drain: %s answered by %s, want %s", id, rid, b.rid)
		}
	}
	// Draining again moves nothing.
	if line, r := adminLine(t, "drain", "--admin", a.admin); r.code != 0 || line != "drained mesh=game moved_spots=0" {
		t.Fatalf("second drain: exit %d stdout %q", r.code, r.stdout)
	}
}

func countOwned(owners map[string]string, rid string) int {
	n := 0
	for _, o := range owners {
		if o == rid {
			n++
		}
	}
	return n
}
