package test

// The dashboard in a real browser: headless Chromium loads /ui of one node
// of a three-process mesh; a weight change and a node kill show up on the
// page, pushed by server-sent events (no reload).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/cdptest"
	"github.com/zlink-go/zlink/location/locationtest"
)

const uiPageWidth = 1360

// uiWaitPage polls a boolean JavaScript expression until it is true,
// failing after d with the page's text and a screenshot.
func uiWaitPage(t *testing.T, p *cdptest.Page, what string, d time.Duration, expr string) {
	t.Helper()
	deadline := time.Now().Add(d)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var ok bool
		lastErr = p.Eval(ctx, "!!("+expr+")", &ok)
		cancel()
		if lastErr == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		<-time.After(50 * time.Millisecond) // poll interval of a condition wait
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var text string
	_ = p.Eval(ctx, "document.body.innerText", &text)
	if png, err := p.Screenshot(ctx, uiPageWidth); err == nil {
		path := filepath.Join(t.ArtifactDir(), "ui-failed.png")
		if os.WriteFile(path, png, 0o644) == nil {
			t.Logf("screenshot of the page: %s", path)
		}
	}
	t.Fatalf("timed out after %s waiting until %s (last error: %v); page text:\n%s", d, what, lastErr, text)
}

// uiJS returns a JavaScript string literal of s.
func uiJS(s string) string { return fmt.Sprintf("%q", s) }

func TestUI_BrowserShowsWeightChangeAndNodeKill(t *testing.T) {
	browser := cdptest.Start(t) // first: without a browser the test fails at once, saying how to get one
	redis := locationtest.StartRedis(t)
	loc := redis.URL()
	common := []string{"--mesh", "game", "--location", loc}
	// ui-a, the node whose page is watched, dials the other two: a peer it
	// dials stays on its page as NotConnected when it goes away. It is the
	// only Object Server, so it hosts every Spot.
	c := cliStartNode(t, append(common, "--rid", "ui-c", "--object", "client", "--server", "match=600")...)
	b := cliStartNode(t, append(common, "--rid", "ui-b", "--object", "client", "--server", "match=300", "--peer", c.peerArg())...)
	a := cliStartNode(t, append(common, "--rid", "ui-a", "--object", "server", "--server", "match=100",
		"--peer", b.peerArg(), "--peer", c.peerArg())...)
	var st cliStatus
	cliWait(t, "ui-a sees ui-b and ui-c ready", 15*time.Second, func() bool {
		cliGetJSON(t, a.admin, "/status?mesh=game", &st)
		return st.peerState("ui-b") == "Ready" && st.peerState("ui-c") == "Ready"
	})
	for _, id := range []string{"player-1", "player-2", "player-3"} {
		if rid := spotOK(t, spotCall(t, loc, "--mesh", "game", "counter", id, "add", "1"), "1"); rid != "ui-a" {
			t.Fatalf("Spot %s on %s, want ui-a", id, rid)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	page, err := browser.OpenPage(ctx, "http://"+a.admin+"/ui", uiPageWidth, 900) // /ui redirects to /ui/
	if err != nil {
		t.Fatal(err)
	}
	peer := func(rid string) string { return `document.querySelector('g.peer[data-rid=` + uiJS(rid) + `]')` }
	ownWeight := `document.querySelector('[data-mesh="game"] [data-channel="match"] .own-weight')`
	uiWaitPage(t, page, "the page is live and shows ui-b and ui-c Ready", 15*time.Second,
		`document.getElementById('conn').textContent === 'live' && `+
			peer("ui-b")+`?.dataset.state === 'Ready' && `+peer("ui-c")+`?.dataset.state === 'Ready' && `+
			ownWeight+`?.textContent === '100' && `+
			`document.querySelector('[data-mesh="game"] tr.kind[data-kind="counter"] .active')?.textContent === '3' && `+
			`Number(document.querySelector('[data-mesh="game"] tr.kind[data-kind="counter"] .turns')?.textContent) >= 3 && `+
			`document.querySelector('#tree li[data-path="/host/mesh:game/spots/counter"] .folded')?.textContent === '3 Spots (folded)'`)
	// A marker that a reload would wipe, and the current event number.
	var seq0 int
	if err := page.Eval(ctx, `(window.__zlinkNoReload = true, Number(document.body.dataset.seq))`, &seq0); err != nil {
		t.Fatal(err)
	}

	// A weight change on the node appears in a later snapshot.
	if r := cliRun(t, 10*time.Second, "weight", "--admin", a.admin, "--mesh", "game", "match", "250"); r.code != 0 {
		t.Fatalf("weight: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	uiWaitPage(t, page, "the page shows weight 250", 10*time.Second, ownWeight+`?.textContent === '250'`)

	// A killed node: its peer turns NotConnected on the graph.
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.wait(10 * time.Second)
	uiWaitPage(t, page, "the graph shows ui-c NotConnected", 15*time.Second,
		peer("ui-c")+`?.dataset.state === 'NotConnected' && `+peer("ui-b")+`?.dataset.state === 'Ready'`)
	// The dead member stays listed, as lost, with its reason; the
	// peers-lost counter names it.
	uiWaitPage(t, page, "the members list ui-c as lost with a reason", 15*time.Second,
		`document.querySelector('tr.member[data-rid="ui-c"]')?.dataset.state === 'lost' && `+
			`document.querySelector('tr.member[data-rid="ui-c"] .why')?.textContent.length > 0 && `+
			`document.querySelector('tr.member[data-rid="ui-b"]')?.dataset.state === 'Ready' && `+
			`document.querySelector('tr.member[data-rid="ui-a"] .spots')?.textContent === '3' && `+
			`/last ui-c: /.test(document.querySelector('[data-mesh="game"] .peers-lost')?.textContent)`)

	var after struct {
		NoReload bool `json:"noReload"`
		Seq      int  `json:"seq"`
	}
	if err := page.Eval(ctx, `({noReload: window.__zlinkNoReload === true, seq: Number(document.body.dataset.seq)})`, &after); err != nil {
		t.Fatal(err)
	}
	if !after.NoReload || after.Seq <= seq0 {
		t.Fatalf("page updates: %+v (event #%d before), want the same page with later events", after, seq0)
	}

	png, err := page.Screenshot(ctx, uiPageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot is not a PNG (%d bytes)", len(png))
	}
	path := filepath.Join(t.ArtifactDir(), "ui.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	// ZLINK_UI_SCREENSHOT=FILE also writes it there (docs/img/ui.png is
	// made this way).
	if out := strings.TrimSpace(os.Getenv("ZLINK_UI_SCREENSHOT")); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
