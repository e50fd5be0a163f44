package test

// The Grafana dashboard (docs/grafana/zlink.json) and docs/observability.md
// stay in step with the metrics: every metric the metrics package
// describes, and every zlink_* family a running zlink-node serves at
// /metrics, is on the dashboard and in the doc; the dashboard uses no
// other.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/admin"
	"github.com/zlink-go/zlink/metrics"
)

var (
	metricNameRe = regexp.MustCompile(`\bzlink_[a-z_]+\b`)
	descNameRe   = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// exportedMetrics returns the zlink_* metric names: the metrics package's
// descriptors plus the families zlink-node serves.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		metrics.New(func() *zlink.Host { return nil }, metrics.Config{}).Describe(ch)
		admin.StoreCollector(func() *zlink.Host { return nil }).Describe(ch)
		close(ch)
	}()
	for d := range ch {
		m := descNameRe.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("descriptor without a name: %s", d)
		}
		names[m[1]] = true
	}
	n := cliStartNode(t, "--rid", "metrics-1", "--server", "match")
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + n.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE zlink_"); ok {
			names["zlink_"+strings.Fields(name)[0]] = true
		}
	}
	if !names["zlink_builtin_handled_total"] || !names["zlink_calls_total"] {
		t.Fatalf("metrics %v lack zlink-node's", names)
	}
	return names
}

// dashboardExprs returns every PromQL expression of the dashboard: panel
// targets and template variable queries.
func dashboardExprs(t *testing.T, raw []byte) []string {
	t.Helper()
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("docs/grafana/zlink.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard title %q uid %q with %d panels", d.Title, d.UID, len(d.Panels))
	}
	var out []string
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Fatalf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Fatalf("panel %q has an empty query", p.Title)
			}
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		out = append(out, v.Definition)
	}
	return out
}

func TestUI_GrafanaDashboardAndDocsCoverEveryMetric(t *testing.T) {
	exported := exportedMetrics(t)
	raw, err := os.ReadFile("../docs/grafana/zlink.json")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, e := range dashboardExprs(t, raw) {
		for _, name := range metricNameRe.FindAllString(e, -1) {
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && exported[b] {
					base = b
				}
			}
			if !exported[base] {
				t.Errorf("the dashboard queries %s, which nothing exports: %s", name, e)
			}
			used[base] = true
		}
	}
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range exported {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !used[n] {
			t.Errorf("metric %s is not on the Grafana dashboard", n)
		}
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("metric %s is not described in docs/observability.md", n)
		}
	}
}
