package test

// A game process that embeds ZLink (examples/embedded) operated with the
// real zlink-node binary: the admin commands and the dashboard work
// against its admin handler (package admin) as against `zlink-node run`.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/cdptest"
	"github.com/zlink-go/zlink/location/locationtest"
)

var (
	embeddedOnce sync.Once
	embeddedBin  string
	embeddedErr  error
)

// embeddedBinary builds ./examples/embedded once per test run, beside
// zlink-node.
func embeddedBinary(t *testing.T) string {
	t.Helper()
	cli := cliBinary(t) // builds zlink-node and makes the directory
	embeddedOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			embeddedErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		embeddedBin = filepath.Join(filepath.Dir(cli), "embedded")
		cmd := exec.Command("go", "build", "-o", embeddedBin, "./examples/embedded")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(out)))
		if b, err := cmd.CombinedOutput(); err != nil {
			embeddedErr = fmt.Errorf("go build ./examples/embedded: %v\n%s", err, b)
		}
	})
	if embeddedErr != nil {
		t.Fatal(embeddedErr)
	}
	return embeddedBin
}

func TestEmbedded_OperatedWithZlinkNode(t *testing.T) {
	browser := cdptest.Start(t) // first: without a browser the test fails at once, saying how to get one
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	tok := relocateToken(t)
	// Mounted under /zlink of its own mux: every command takes the prefix in
	// --admin.
	p := procStart(t, embeddedBinary(t), "--store", loc, "--admin", "127.0.0.1:0", "--admin-prefix", "/zlink", "--admin-token-file", tok)
	line := p.nextLine(30 * time.Second)
	f := cliFields(line)
	if !strings.HasPrefix(line, "ready ") || f["mesh"] != "game" || !strings.HasPrefix(f["rid"], "game") || f["endpoint"] == "" || !strings.HasSuffix(f["admin"], "/zlink") {
		t.Fatalf("want the ready line of zlink-node run, got %q; stderr:\n%s", line, p.stderr.String())
	}
	adm, rid := f["admin"], f["rid"]
	run := func(args ...string) cliResult {
		t.Helper()
		r := cliRun(t, 30*time.Second, args...)
		if r.code != 0 {
			t.Fatalf("zlink-node %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}

	// Players join a room through the game's channel: its Spot activates.
	for _, player := range []string{"alice", "bob"} {
		r := run("request", "--location", loc, "--mesh", "game", "--channel", "match", "--packet", "join", "--data", "room-1 "+player, "--count", "2")
		if s := parseSummary(t, r.stdout); s.ok != 2 || s.errors != 0 || s.byRID[rid] != 2 {
			t.Fatalf("join %s: %q", player, r.stdout)
		}
	}

	// status, tree and spot-owner read the embedded process.
	st := run("status", "--admin", adm).stdout
	if first := strings.SplitN(st, "\n", 2)[0]; !strings.HasPrefix(first, "mesh=game rid="+rid+" ") || !strings.Contains(first, " state=ready ") || !strings.Contains(st, "channel name=match role=server weight=100") {
		t.Fatalf("status:\n%s", st)
	}
	if tree := run("tree", "--admin", adm).stdout; !strings.Contains(tree, "/host/mesh:game/spots/room spot-kind running") || !strings.Contains(tree, " children=1") {
		t.Fatalf("tree:\n%s", tree)
	}
	want := "rid=" + rid
	if o := run("spot-owner", "--admin", adm, "--kind", "room", "--id", "room-1").stdout; !strings.Contains(o, want) || !strings.Contains(o, " active=yes local=true ") {
		t.Fatalf("spot-owner: %q", o)
	}

	// weight: refused without the token, done with it.
	if r := cliRun(t, 10*time.Second, "weight", "--admin", adm, "match", "40"); r.code != 1 || !strings.Contains(r.stderr, "admin token") {
		t.Fatalf("weight without the token: exit %d stderr %q", r.code, r.stderr)
	}
	if out := run("weight", "--admin", adm, "--admin-token-file", tok, "match", "40").stdout; out != "ok mesh=game channel=match weight=40\n" {
		t.Fatalf("weight: %q", out)
	}

	// The dashboard in headless Chromium shows the process: live, the
	// new weight, the room Spot.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := browser.OpenPage(ctx, "http://"+adm+"/ui", uiPageWidth, 900) // /ui redirects to /ui/
	if err != nil {
		t.Fatal(err)
	}
	uiWaitPage(t, page, "the page is live with weight 40 and one room", 15*time.Second,
		`document.getElementById('conn').textContent === 'live' && `+
			`document.querySelector('[data-mesh="game"] [data-channel="match"] .own-weight')?.textContent === '40' && `+
			`document.querySelector('[data-mesh="game"] tr.kind[data-kind="room"] .active')?.textContent === '1' && `+
			`document.querySelector('#tree li[data-path="/host/mesh:game/spots/room"]') !== null`)

	// drain: the room is saved and released; the process is not ready.
	if out := run("drain", "--admin", adm, "--admin-token-file", tok, "--timeout", "20s").stdout; !strings.HasPrefix(out, "drained mesh=game moved_spots=") {
		t.Fatalf("drain: %q", out)
	}
	var health struct {
		Status string `json:"status"`
	}
	if code := cliGetJSON(t, adm, "/readyz", &health); code != 503 || health.Status != "not_ready" {
		t.Fatalf("/readyz after the drain: %d %+v", code, health)
	}
	uiWaitPage(t, page, "the page shows the drain", 15*time.Second,
		`document.querySelector('[data-mesh="game"] g.self')?.dataset.state === 'draining'`)

	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM; stderr:\n%s", code, p.stderr.String())
	}
}
