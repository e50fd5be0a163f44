package test

// The Grafana dashboard against a real Prometheus: three `zlink-node run`
// processes and a caller under load, a weight change, a kill -9 and a
// drain, scraped every second by a prometheus process; then every query
// of docs/grafana/zlink.json runs through Prometheus's HTTP API (a query
// Prometheus rejects fails the test) and the results are drawn as a
// static page laid out like the dashboard, screenshotted by headless
// Chromium. Opt-in (ZLINK_GRAFANA_PREVIEW=FILE.png): it needs prometheus,
// which `make test` does not install. Grafana itself is not run: the page
// is a preview and says so.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/cdptest"
	"github.com/zlink-go/zlink/location/locationtest"
	"github.com/zlink-go/zlink/metrics"
	"github.com/zlink-go/zlink/routemesh"
)

func TestGrafana_PreviewFromPrometheus(t *testing.T) {
	out := strings.TrimSpace(os.Getenv("ZLINK_GRAFANA_PREVIEW"))
	if out == "" {
		t.Skip("opt-in: ZLINK_GRAFANA_PREVIEW=FILE.png runs it (it needs prometheus in PATH and headless Chromium)")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("ZLINK_GRAFANA_PREVIEW is set but there is no prometheus in PATH (%v): apt-get install prometheus", err)
	}
	browser := cdptest.Start(t)
	dash := loadDashboard(t)
	loc := locationtest.StartRedis(t).URL()

	// The mesh of the browser test: gf-a dials gf-b and gf-c and is the
	// only Object Server; gf-gw, in this process, calls them.
	common := []string{"--mesh", "game", "--location", loc}
	c := cliStartNode(t, append(common, "--rid", "gf-c", "--object", "client", "--server", "match=600")...)
	b := cliStartNode(t, append(common, "--rid", "gf-b", "--object", "client", "--server", "match=300", "--peer", c.peerArg())...)
	a := cliStartNode(t, append(common, "--rid", "gf-a", "--object", "server", "--server", "match=100",
		"--peer", b.peerArg(), "--peer", c.peerArg())...)
	var st cliStatus
	cliWait(t, "gf-a sees gf-b and gf-c ready", 20*time.Second, func() bool {
		cliGetJSON(t, a.admin, "/status?mesh=game", &st)
		return st.peerState("gf-b") == "Ready" && st.peerState("gf-c") == "Ready"
	})
	gw, gwMetrics := grafanaCaller(t, a, b, c)
	prom := startPrometheus(t, promBin, []promTarget{
		{"gf-a", a.admin}, {"gf-b", b.admin}, {"gf-c", c.admin}, {"gf-gw", gwMetrics}})
	start := time.Now()
	prom.waitUntil("every target is scraped", 60*time.Second, func() bool { return prom.value(`count(up == 1)`) == 4 })

	spots := func(from, to int) {
		for i := from; i <= to; i++ {
			spotOK(t, spotCall(t, loc, "--mesh", "game", "counter", fmt.Sprintf("player-%d", i), "add", "1"), "1")
		}
	}
	spots(1, 3)
	load := startGrafanaLoad(gw)
	t.Cleanup(load.stop)
	prom.waitScrapes("gf-gw", 15)

	var marks []previewMark
	mark := func(label string) { marks = append(marks, previewMark{at: time.Now(), label: label}) }
	if r := cliRun(t, 10*time.Second, "weight", "--admin", a.admin, "--mesh", "game", "match", "400"); r.code != 0 {
		t.Fatalf("weight: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	mark("weight of gf-a 100 → 400")
	prom.waitUntil("Prometheus has gf-a's weight 400", 30*time.Second, func() bool {
		return prom.value(`zlink_channel_weight{instance="gf-a", channel="match"}`) == 400
	})
	spots(4, 6)
	prom.waitScrapes("gf-gw", 12)

	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	b.wait(10 * time.Second)
	mark("kill -9 gf-b")
	prom.waitUntil("Prometheus has gf-b NotConnected", 30*time.Second, func() bool {
		return prom.value(`sum(zlink_peers{state="NotConnected"})`) >= 1
	})
	prom.waitScrapes("gf-gw", 12)

	if r := cliRun(t, 60*time.Second, "drain", "--admin", c.admin); r.code != 0 {
		t.Fatalf("drain: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	mark("drain gf-c")
	prom.waitUntil("Prometheus has gf-c draining", 30*time.Second, func() bool {
		return prom.value(`zlink_node_state{instance="gf-c", state="draining"}`) == 1
	})
	prom.waitScrapes("gf-gw", 12)
	load.stop()
	end := time.Now()
	t.Logf("load: %d ok, %d errors", load.ok, load.errs)

	// Every query of the dashboard, as Grafana would send it.
	window := end.Sub(start)
	vars := grafanaVars{instance: ".*", mesh: "game", step: max(time.Second, (window / 240).Round(time.Second)), window: window}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		def, err := vars.expand(v.Definition)
		if err == nil {
			var vals []string
			vals, err = prom.labelValues(def, start, end)
			t.Logf("variable %s = %v", v.Name, vals)
			if err == nil && v.Name == "mesh" && !slices.Contains(vals, "game") {
				err = fmt.Errorf("values %v lack the mesh game", vals)
			}
		}
		if err != nil {
			t.Errorf("variable %s: %v\n  query: %s", v.Name, err, v.Definition)
		}
	}
	var panels []previewPanel
	var empty []string
	for _, p := range dash.Panels {
		pp := previewPanel{p: p}
		for _, tg := range p.Targets {
			expr, err := vars.expand(tg.Expr)
			var res []promSample
			var warnings []string
			if err == nil && p.Type == "stat" {
				res, warnings, err = prom.query(expr, end)
			} else if err == nil {
				res, warnings, err = prom.queryRange(expr, start, end, vars.step)
			}
			if err != nil {
				t.Errorf("panel %q, target %s: %v\n  query: %s", p.Title, tg.RefID, err, tg.Expr)
				pp.err = err.Error()
				continue
			}
			if len(warnings) > 0 {
				t.Logf("panel %q, target %s: warnings %v", p.Title, tg.RefID, warnings)
			}
			for _, s := range res {
				pp.series = append(pp.series, previewSeries{name: legendName(tg.LegendFormat, s.Metric), points: s.Points})
			}
		}
		if p.Type == "stat" {
			slices.SortFunc(pp.series, func(x, y previewSeries) int { return strings.Compare(x.name, y.name) })
		}
		if p.Type != "row" && len(pp.series) == 0 && pp.err == "" {
			if p.Type == "stat" {
				t.Errorf("stat panel %q shows no value", p.Title) // a stat panel always has one
			}
			empty = append(empty, p.Title)
		}
		panels = append(panels, pp)
	}
	t.Logf("%d panels; without data in this scenario: %q", len(panels), empty)
	grafanaCheckStats(t, panels)

	pg := previewPage{title: dash.Title, width: uiPageWidth, start: start, end: end, step: vars.step, panels: panels, marks: marks}
	pg.vars, pg.caption = grafanaCaption(prom, vars, start, end, marks)
	dir := t.ArtifactDir()
	page := filepath.Join(dir, "grafana-preview.html")
	if err := os.WriteFile(page, []byte(renderPreview(pg)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tab, err := browser.OpenPage(ctx, "file://"+page, uiPageWidth, 900)
	if err != nil {
		t.Fatal(err)
	}
	uiWaitPage(t, tab, "the preview is loaded", 15*time.Second, fmt.Sprintf(
		`document.readyState === 'complete' && document.querySelectorAll('.panel, .row').length === %d`, len(panels)))
	png, err := tab.Screenshot(ctx, uiPageWidth)
	if err != nil {
		t.Fatal(err)
	}
	if png, err = shrinkPNG(png); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "grafana.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("preview: %s (%d bytes); page: %s", out, len(png), page)
}

// grafanaCheckStats checks that the overview's stat panels saw what the
// test did: a node not ready (the drain), peers NotConnected and lost (the
// kill), and no failed node.
func grafanaCheckStats(t *testing.T, panels []previewPanel) {
	t.Helper()
	checks := []struct {
		in   string
		want func(float64) bool
		what string
	}{
		{`state!="ready"`, func(v float64) bool { return v >= 1 }, "at least 1 (gf-c is draining)"},
		{`state="NotConnected"`, func(v float64) bool { return v >= 1 }, "at least 1 (gf-b was killed)"},
		{`event="peers_lost"`, func(v float64) bool { return v >= 1 }, "at least 1 (gf-b was killed)"},
		{`state="failed"`, func(v float64) bool { return v == 0 }, "0"},
	}
	for _, c := range checks {
		found := false
		for _, pp := range panels {
			if pp.p.Type != "stat" || len(pp.p.Targets) != 1 || !strings.Contains(pp.p.Targets[0].Expr, c.in) {
				continue
			}
			found = true
			if len(pp.series) != 1 || !c.want(pp.series[0].points[0].V) {
				t.Errorf("stat panel %q: %v, want one value, %s", pp.p.Title, pp.series, c.what)
			}
		}
		if !found {
			t.Errorf("no stat panel queries %s", c.in)
		}
	}
}

// grafanaCaption returns the variable bar and the caption of the page.
func grafanaCaption(prom *promServer, vars grafanaVars, start, end time.Time, marks []previewMark) (string, string) {
	version := "?"
	if data, _, err := prom.get("/api/v1/status/buildinfo", nil); err == nil {
		var bi struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(data, &bi) == nil {
			version = bi.Version
		}
	}
	bar := fmt.Sprintf(`<span><b>Data source</b>Prometheus %s</span><span><b>Instance</b>All</span><span><b>Mesh</b>%s</span>`+
		`<span><b>Time (UTC)</b>%s to %s</span>`, html.EscapeString(version), html.EscapeString(vars.mesh),
		start.UTC().Format("15:04:05"), end.UTC().Format("15:04:05"))
	var ms []string
	for i, m := range marks {
		ms = append(ms, fmt.Sprintf("%d %s at %s", i+1, html.EscapeString(m.label), m.at.UTC().Format("15:04:05")))
	}
	caption := fmt.Sprintf(`<b>Preview rendered from <code>docs/grafana/zlink.json</code>'s queries against Prometheus %s — not Grafana.</b> `+
		`Every panel's PromQL ran through Prometheus's HTTP API (time series: <code>query_range</code>, step %s; stat panels: `+
		`<code>query</code> at the end) with <code>$instance</code> = <code>.*</code>, <code>$mesh</code> = <code>%s</code>, `+
		`<code>$__rate_interval</code> = <code>%s</code>, and was drawn by <code>TestGrafana_PreviewFromPrometheus</code> `+
		`(<code>test/grafana_preview_test.go</code>) at each panel's gridPos. Data: three <code>zlink-node run</code> processes `+
		`(gf-a, gf-b, gf-c) and a caller in the test (gf-gw: echo calls, calls that time out, calls to a channel nobody serves), `+
		`scraped every %s. Dashed lines: %s.`,
		html.EscapeString(version), vars.step, html.EscapeString(vars.mesh), vars.rateInterval(), promScrape, strings.Join(ms, "; "))
	return bar, caption
}

// grafanaCaller starts gf-gw in this process: a Client of match (served
// by the peers) and of lobby (served by nobody), its metrics on a loopback
// HTTP server as an embedding application would serve them.
func grafanaCaller(t *testing.T, peers ...*cliNode) (*routemesh.Node, string) {
	t.Helper()
	o := zlink.NewOptions()
	m := o.AddRouteMesh("game").SetRoutingID("gf-gw")
	for _, p := range peers {
		m.AddPeer(p.endpoint, p.rid)
	}
	m.Channel("match").Client()
	m.Channel("lobby").Client()
	h := startHost(t, o)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.For(h))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	n := h.Mesh("game")
	if err := n.WaitPeers(ctxT(t, 20*time.Second), len(peers)); err != nil {
		t.Fatalf("gf-gw: peers: %v", err)
	}
	return n, ln.Addr().String()
}

// grafanaLoad is steady traffic from gf-gw: echo calls on match, sleep
// calls that time out, and calls of lobby that find no Server.
type grafanaLoad struct {
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	mu       sync.Mutex
	ok, errs int
}

func startGrafanaLoad(n *routemesh.Node) *grafanaLoad {
	l := &grafanaLoad{done: make(chan struct{})}
	worker := func(every, timeout time.Duration, channel, packet, payload string) {
		defer l.wg.Done()
		tick := time.NewTicker(every) // the pace of the traffic, not a wait for anything
		defer tick.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			_, err := n.Call(ctx, channel, packet, []byte(payload))
			cancel()
			l.mu.Lock()
			if err == nil {
				l.ok++
			} else {
				l.errs++
			}
			l.mu.Unlock()
		}
	}
	for range 4 {
		l.wg.Add(1)
		go worker(25*time.Millisecond, 2*time.Second, "match", "echo", "x")
	}
	l.wg.Add(2)
	go worker(250*time.Millisecond, 100*time.Millisecond, "match", "sleep", "300ms")
	go worker(500*time.Millisecond, time.Second, "lobby", "echo", "x")
	return l
}

func (l *grafanaLoad) stop() {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
}
