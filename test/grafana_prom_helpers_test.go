package test

// Helpers of the Grafana dashboard preview (grafana_preview_test.go): a
// real Prometheus process scraping the nodes, its HTTP query API, and the
// dashboard's panels with Grafana's variables substituted.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promScrape is the scrape interval of the preview's Prometheus; the
// dashboard's $__rate_interval is derived from it as Grafana does for a
// data source configured with it.
const promScrape = time.Second

// promServer is a running prometheus process.
type promServer struct {
	t    *testing.T
	addr string // host:port of its HTTP API
	cmd  *exec.Cmd
	log  *cliBuffer
	http *http.Client
}

// promTarget is one scraped /metrics endpoint; instance is the label it
// gets (Prometheus would use the address).
type promTarget struct{ instance, addr string }

// startPrometheus runs bin with a temporary configuration that scrapes
// targets every promScrape and a temporary storage directory; cleanup
// stops it.
func startPrometheus(t *testing.T, bin string, targets []promTarget) *promServer {
	t.Helper()
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", promScrape, promScrape, promScrape)
	cfg.WriteString("scrape_configs:\n  - job_name: zlink\n    static_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels: {instance: %q}\n", tg.addr, tg.instance)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(freeEndpoint(t), "tcp://")
	p := &promServer{t: t, addr: addr, log: &cliBuffer{},
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	p.cmd = exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := p.http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited before it was ready; its log:\n%s", p.log.String())
		case <-time.After(100 * time.Millisecond): // poll interval of a condition wait
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s after 30s (last error %v); its log:\n%s", addr, err, p.log.String())
		}
	}
}

// promSample is one series of a query result: an instant query has one
// point, a range query one per step.
type promSample struct {
	Metric map[string]string
	Points []promPoint
}

type promPoint struct {
	T time.Time
	V float64
}

// get calls the HTTP API and returns its data, or Prometheus's error
// (a rejected query is an error with its type and message).
func (p *promServer) get(path string, q url.Values) (json.RawMessage, []string, error) {
	resp, err := p.http.Get("http://" + p.addr + path + "?" + q.Encode())
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var r struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil, fmt.Errorf("HTTP %d: %v: %.200s", resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return nil, r.Warnings, fmt.Errorf("prometheus rejected it (HTTP %d, %s): %s", resp.StatusCode, r.ErrorType, r.Error)
	}
	return r.Data, r.Warnings, nil
}

// query runs an instant query at at; queryRange one from start to end.
func (p *promServer) query(expr string, at time.Time) ([]promSample, []string, error) {
	return p.run("/api/v1/query", url.Values{"query": {expr}, "time": {promTime(at)}})
}

func (p *promServer) queryRange(expr string, start, end time.Time, step time.Duration) ([]promSample, []string, error) {
	return p.run("/api/v1/query_range", url.Values{"query": {expr}, "start": {promTime(start)}, "end": {promTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

func (p *promServer) run(path string, q url.Values) ([]promSample, []string, error) {
	data, warnings, err := p.get(path, q)
	if err != nil {
		return nil, warnings, err
	}
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, warnings, err
	}
	var raw []struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
		Values [][]any           `json:"values"`
	}
	switch d.ResultType {
	case "scalar":
		var v []any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, warnings, err
		}
		raw = append(raw, struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		}{Value: v})
	case "vector", "matrix":
		if err := json.Unmarshal(d.Result, &raw); err != nil {
			return nil, warnings, err
		}
	default:
		return nil, warnings, fmt.Errorf("result type %q", d.ResultType)
	}
	out := make([]promSample, 0, len(raw))
	for _, r := range raw {
		s := promSample{Metric: r.Metric}
		if r.Value != nil {
			r.Values = append(r.Values, r.Value)
		}
		for _, v := range r.Values {
			pt, err := promParsePoint(v)
			if err != nil {
				return nil, warnings, err
			}
			s.Points = append(s.Points, pt)
		}
		out = append(out, s)
	}
	return out, warnings, nil
}

func promParsePoint(v []any) (promPoint, error) {
	ts, ok1 := v[0].(float64)
	str, ok2 := v[1].(string)
	if len(v) != 2 || !ok1 || !ok2 {
		return promPoint{}, fmt.Errorf("point %v", v)
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return promPoint{}, err
	}
	return promPoint{T: time.UnixMilli(int64(ts * 1000)), V: f}, nil
}

// value is the value of a query that must return one series now (-1
// when it returns none or fails: condition waits call it).
func (p *promServer) value(expr string) float64 {
	s, _, err := p.query(expr, time.Now())
	if err != nil || len(s) != 1 {
		return -1
	}
	return s[0].Points[0].V
}

// waitUntil polls a condition with a deadline, failing with Prometheus's log.
func (p *promServer) waitUntil(what string, d time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting until %s; prometheus log:\n%s", d, what, p.log.String())
		}
		<-time.After(100 * time.Millisecond) // poll interval of a condition wait
	}
}

// waitScrapes waits until Prometheus holds n more scrapes of instance.
func (p *promServer) waitScrapes(instance string, n int) {
	p.t.Helper()
	expr := fmt.Sprintf(`count_over_time(up{instance=%q}[1h])`, instance)
	base := p.value(expr)
	p.waitUntil(fmt.Sprintf("%d more scrapes of %s", n, instance), time.Duration(n)*promScrape+30*time.Second,
		func() bool { return p.value(expr) >= base+float64(n) })
}

// labelValues runs a Grafana label_values(selector, label) variable query
// through the series API, the way Grafana's Prometheus data source does.
func (p *promServer) labelValues(def string, start, end time.Time) ([]string, error) {
	m := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`).FindStringSubmatch(strings.TrimSpace(def))
	if m == nil {
		return nil, fmt.Errorf("not a label_values(selector, label) query")
	}
	data, _, err := p.get("/api/v1/label/"+m[2]+"/values",
		url.Values{"match[]": {m[1]}, "start": {promTime(start)}, "end": {promTime(end)}})
	if err != nil {
		return nil, err
	}
	var vals []string
	if err := json.Unmarshal(data, &vals); err != nil {
		return nil, err
	}
	slices.Sort(vals)
	return vals, nil
}

// grafanaVars are the values the preview gives the dashboard's variables
// and Grafana's built-in interval variables.
type grafanaVars struct {
	instance, mesh string
	step           time.Duration // $__interval: the range query's step
	window         time.Duration // $__range
}

// rateInterval is Grafana's $__rate_interval: max($__interval + scrape
// interval, 4 × scrape interval).
func (v grafanaVars) rateInterval() time.Duration { return max(v.step+promScrape, 4*promScrape) }

var grafanaVarRe = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// expand substitutes the variables in a panel's expression; a variable the
// preview does not know is an error.
func (v grafanaVars) expand(expr string) (string, error) {
	dur := func(d time.Duration) string { return strconv.Itoa(int(d.Round(time.Second).Seconds())) + "s" }
	vals := map[string]string{
		"instance": v.instance, "mesh": v.mesh,
		"__interval": dur(v.step), "__rate_interval": dur(v.rateInterval()), "__range": dur(v.window),
		"__interval_ms": strconv.FormatInt(v.step.Milliseconds(), 10), "__range_s": strconv.Itoa(int(v.window.Seconds())),
	}
	var unknown []string
	out := grafanaVarRe.ReplaceAllStringFunc(expr, func(s string) string {
		name := grafanaVarRe.FindStringSubmatch(s)[1]
		if val, ok := vals[name]; ok {
			return val
		}
		unknown = append(unknown, s)
		return s
	})
	if unknown != nil {
		return "", fmt.Errorf("unknown variables %v", unknown)
	}
	return out, nil
}

// grafanaDashboard is what the preview reads of docs/grafana/zlink.json.
type grafanaDashboard struct {
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit       string        `json:"unit"`
			Color      *grafanaColor `json:"color"`
			Thresholds *struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Custom struct {
				LineWidth         float64 `json:"lineWidth"`
				FillOpacity       float64 `json:"fillOpacity"`
				LineInterpolation string  `json:"lineInterpolation"`
				Stacking          struct {
					Mode string `json:"mode"`
				} `json:"stacking"`
			} `json:"custom"`
		} `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options string `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string       `json:"id"`
				Value grafanaColor `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Options struct {
		ColorMode string `json:"colorMode"`
		TextMode  string `json:"textMode"`
	} `json:"options"`
	Targets []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

type grafanaColor struct {
	Mode       string `json:"mode"`
	FixedColor string `json:"fixedColor"`
}

// loadDashboard reads the dashboard of the repository.
func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	raw, err := os.ReadFile("../docs/grafana/zlink.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("docs/grafana/zlink.json: %v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("docs/grafana/zlink.json has no panels")
	}
	return d
}
