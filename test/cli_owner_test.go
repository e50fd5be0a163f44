package test

// Black-box test of `zlink-node spot-owner`: real zlink-node processes on
// a real redis-server.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// spot-owner names the owner of a called Spot (active there as the owner
// answers, unknown as the other node answers), says not_found for a Spot
// nobody owns, and follows a move. (That the look-up writes nothing is
// tested in package spot.)
func TestCLISpotOwner_ShowsOwnerAndClaimsNothing(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	tok := relocateToken(t)
	a, b := relocateServers(t, loc, tok)
	nodes := map[string]*cliNode{a.rid: a, b.rid: b}
	call := func(args ...string) cliResult {
		return spotCall(t, loc, append([]string{"--mesh", "game"}, args...)...)
	}

	// Nobody owns it; asking (no token needed: it only reads) changes
	// nothing.
	for _, n := range []*cliNode{a, b} {
		wantAdminError(t, "not_found", "spot has no owner", "spot-owner", "--admin", n.admin, "--kind", "counter", "--id", "p-owner")
	}
	owner := spotOK(t, call("counter", "p-owner", "add", "1"), "1")
	own := nodes[owner]
	if own == nil {
		t.Fatalf("owner %q is neither %s nor %s", owner, a.rid, b.rid)
	}
	other := a
	if own == a {
		other = b
	}

	var info struct {
		RID        string `json:"rid"`
		Generation uint64 `json:"generation"`
		Epoch      uint64 `json:"epoch"`
	}
	r := cliRun(t, 30*time.Second, "spot-owner", "--admin", own.admin, "--kind", "counter", "--id", "p-owner", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &info) != nil || info.RID != own.rid || info.Generation == 0 || info.Epoch == 0 {
		t.Fatalf("spot-owner --json: exit %d %q %+v; stderr:\n%s", r.code, r.stdout, info, r.stderr)
	}
	line, r := adminLine(t, "spot-owner", "--admin", own.admin, "--kind", "counter", "--id", "p-owner")
	want := fmt.Sprintf("owner kind=counter id=p-owner rid=%s generation=%d epoch=%d lease_live=true active=yes local=true mesh=game", own.rid, info.Generation, info.Epoch)
	if r.code != 0 || line != want {
		t.Fatalf("spot-owner on the owner: exit %d %q, want %q", r.code, line, want)
	}
	line, r = adminLine(t, "spot-owner", "--admin", other.admin, "--kind", "counter", "--id", "p-owner")
	want = fmt.Sprintf("owner kind=counter id=p-owner rid=%s generation=%d epoch=%d lease_live=true active=unknown local=false mesh=game", own.rid, info.Generation, info.Epoch)
	if r.code != 0 || line != want {
		t.Fatalf("spot-owner on the other node: exit %d %q, want %q", r.code, line, want)
	}

	// A move: the owner and the epoch change.
	if _, r := adminLine(t, "spot-move", "--admin", own.admin, "--admin-token-file", tok, "--kind", "counter", "--id", "p-owner", "--to", other.rid); r.code != 0 {
		t.Fatalf("spot-move: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	line, r = adminLine(t, "spot-owner", "--admin", other.admin, "--kind", "counter", "--id", "p-owner")
	if f := cliFields(line); r.code != 0 || f["rid"] != other.rid || f["active"] != "yes" || f["epoch"] == fmt.Sprint(info.Epoch) {
		t.Fatalf("spot-owner after the move: exit %d %q", r.code, line)
	}

	// Usage: exit 2.
	if r := cliRun(t, 10*time.Second, "spot-owner", "--admin", a.admin, "--kind", "counter"); r.code != 2 || r.stdout != "" {
		t.Fatalf("spot-owner without --id: exit %d %q", r.code, r.stdout)
	}
}
