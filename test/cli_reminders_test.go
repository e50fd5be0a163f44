package test

// Black-box test of `zlink-node spot-reminders`: real zlink-node
// processes on a real redis-server, hosting the built-in counter kind
// (a firing adds the reminder's payload).

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

// spot-reminders registers a reminder on a Spot nobody activated, lists
// it through either node, the reminder fires (the counter grows without
// a call), and a cancel removes it; bad input is a usage error (exit 2)
// or a config error (exit 1).
func TestCLISpotReminders_SetListFireCancel(t *testing.T) {
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	tok := relocateToken(t)
	a, b := relocateServers(t, loc, tok)
	rem := func(n *cliNode, args ...string) cliResult {
		return cliRun(t, 30*time.Second, append([]string{"spot-reminders", "--admin", n.admin, "--admin-token-file", tok, "--kind", "counter", "--id", "p-rem"}, args...)...)
	}

	if r := rem(a); r.code != 0 || r.stdout != "" {
		t.Fatalf("list of none: exit %d %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r := rem(a, "--set", "tick", "--every", "1s", "--payload", "5")
	f := cliFields(r.stdout)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "reminder kind=counter id=p-rem name=tick ") || f["period"] != "1s" || f["payload"] != `"5"` || f["due"] == "" {
		t.Fatalf("set: exit %d %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := rem(b); r.code != 0 || cliFields(r.stdout)["name"] != "tick" || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("list through the other node: exit %d %q", r.code, r.stdout)
	}
	// It fires: the counter grows by 5 per firing, never called.
	waitFor(t, "two firings", 30*time.Second, func() bool {
		c := spotCall(t, loc, "--mesh", "game", "counter", "p-rem", "get")
		v, err := strconv.Atoi(cliFields(strings.TrimSpace(c.stdout))["result"])
		return c.code == 0 && err == nil && v >= 10 && v%5 == 0
	})
	if r := rem(b, "--cancel", "tick"); r.code != 0 || r.stdout != "cancelled kind=counter id=p-rem name=tick found=true\n" {
		t.Fatalf("cancel: exit %d %q", r.code, r.stdout)
	}
	if r := rem(a, "--cancel", "tick"); r.code != 0 || cliFields(r.stdout)["found"] != "false" {
		t.Fatalf("cancel again: exit %d %q", r.code, r.stdout)
	}
	if r := rem(a); r.code != 0 || r.stdout != "" {
		t.Fatalf("list after cancel: exit %d %q", r.code, r.stdout)
	}
	// A period under a second is refused by the node (exit 1); bad flag
	// combinations before any request (exit 2).
	if r := rem(a, "--set", "fast", "--every", "500ms"); r.code != 1 || !strings.HasPrefix(r.stdout, "error config ") {
		t.Fatalf("--every 500ms: exit %d %q", r.code, r.stdout)
	}
	for _, bad := range [][]string{{"--set", "x"}, {"--set", "x", "--cancel", "y", "--every", "1s"}, {"--every", "1s"}, {"--set", "x", "--in", "1s", "--at", "2030-01-01T00:00:00Z"}} {
		if r := rem(a, bad...); r.code != 2 || r.stdout != "" {
			t.Fatalf("%v: exit %d %q, want a usage error", bad, r.code, r.stdout)
		}
	}
}
