package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zlink-go/zlink/routemesh"
)

// call sends one request to the admin API at base and returns the status,
// the decoded error body (when there is one) and the raw body. POSTs are
// JSON, as the CLI sends them.
func call(t *testing.T, method, url, token, body string) (int, ErrorResponse, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e ErrorResponse
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(raw, &e)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, e, resp.Header.Get("Location")
	}
	return resp.StatusCode, e, string(raw)
}

// Options New cannot serve are refused with ErrOptions.
func TestOptions_Refused(t *testing.T) {
	for name, o := range map[string]Options{
		"short token":            {Token: []byte("short")},
		"reads without a token":  {ProtectReads: true},
		"prefix without slash":   {Prefix: "zlink"},
		"prefix ending in slash": {Prefix: "/zlink/"},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: %v, want ErrOptions", name, err)
		}
	}
}

// Mounted under a prefix in an existing mux: every endpoint answers under
// it (the /ui redirect included), the mux's own routes stay its own, and
// a path under the prefix the API does not have is a JSON 404.
func TestOptions_PrefixMountsUnderAMux(t *testing.T) {
	h := uiHost(t, echoServer("p1"))
	mux := http.NewServeMux()
	mux.Handle("/zlink/", Handler(h, Options{Prefix: "/zlink"}))
	mux.HandleFunc("/game", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "game") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var st struct {
		RID string `json:"rid"`
	}
	if code := getJSON(t, srv.URL+"/zlink/status", &st); code != http.StatusOK || st.RID != "p1" {
		t.Fatalf("GET /zlink/status = %d %+v", code, st)
	}
	for _, path := range []string{"/zlink/tree", "/zlink/spots", "/zlink/healthz", "/zlink/readyz", "/zlink/metrics", "/zlink/ui/", "/zlink/ui/app.js", "/zlink/ui/snapshot"} {
		if code, _, body := call(t, http.MethodGet, srv.URL+path, "", ""); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	if code, _, loc := call(t, http.MethodGet, srv.URL+"/zlink/ui", "", ""); code != http.StatusMovedPermanently || loc != "/zlink/ui/" {
		t.Errorf("GET /zlink/ui = %d Location %q, want 301 to /zlink/ui/", code, loc)
	}
	if code, _, body := call(t, http.MethodPost, srv.URL+"/zlink/weight", "", `{"channel":"match","weight":9}`); code != http.StatusOK {
		t.Errorf("POST /zlink/weight = %d %s", code, body)
	}
	if code, _, body := call(t, http.MethodGet, srv.URL+"/game", "", ""); code != http.StatusOK || body != "game" {
		t.Errorf("the mux's own route: %d %q", code, body)
	}
	if code, _, _ := call(t, http.MethodGet, srv.URL+"/status", "", ""); code != http.StatusNotFound {
		t.Errorf("GET /status outside the prefix = %d, want 404", code)
	}
	if code, e, _ := call(t, http.MethodGet, srv.URL+"/zlink/nothing", "", ""); code != http.StatusNotFound {
		t.Errorf("GET /zlink/nothing = %d %+v, want 404", code, e)
	}
}

// Read-only: every endpoint that changes the node is refused (403
// read_only), with or without the token, and nothing changes; reads work.
func TestOptions_ReadOnlyRefusesEveryChange(t *testing.T) {
	_, h, url := apiWith(t, Options{ReadOnly: true, Token: []byte(testToken)}, echoServer("ro1"))
	for _, path := range []string{"/weight", "/drain", "/undrain", "/relocate?to=x", "/spots/move?kind=k&id=i&to=x"} {
		for _, tok := range []string{"", testToken} {
			if code, e, body := call(t, http.MethodPost, url+path, tok, `{"channel":"match","weight":7}`); code != http.StatusForbidden || e.Code != "read_only" {
				t.Errorf("POST %s (token %v) = %d %s, want 403 read_only", path, tok != "", code, body)
			}
		}
	}
	st, err := h.Mesh("default").Status(t.Context())
	if err != nil || st.State != routemesh.NodeReady || st.Channels[0].Weight != 100 {
		t.Fatalf("a read-only API changed the node: %v weight %d (%v)", st.State, st.Channels[0].Weight, err)
	}
	if code, _, _ := call(t, http.MethodGet, url+"/status", "", ""); code != http.StatusOK {
		t.Fatalf("GET /status read-only = %d", code)
	}
}

// ProtectReads: every read but the health probes needs the token.
func TestOptions_ProtectReads(t *testing.T) {
	_, _, url := apiWith(t, Options{Token: []byte(testToken), ProtectReads: true}, echoServer("pr1"))
	for _, path := range []string{"/status", "/tree", "/spots", "/metrics", "/ui/", "/ui/snapshot"} {
		if code, e, _ := call(t, http.MethodGet, url+path, "", ""); code != http.StatusUnauthorized || e.Code != "unauthorized" {
			t.Errorf("GET %s without the token = %d %+v, want 401", path, code, e)
		}
		if code, _, body := call(t, http.MethodGet, url+path, testToken, ""); code != http.StatusOK {
			t.Errorf("GET %s with the token = %d %s", path, code, body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _, body := call(t, http.MethodGet, url+path, "", ""); code != http.StatusOK {
			t.Errorf("GET %s without the token = %d %s", path, code, body)
		}
	}
}

// Pprof is off by default; on, its profiles need the token when one is
// set.
func TestOptions_Pprof(t *testing.T) {
	off := httptest.NewServer(Handler(nil, Options{}))
	defer off.Close()
	if code, _, _ := call(t, http.MethodGet, off.URL+"/debug/pprof/heap", "", ""); code != http.StatusNotFound {
		t.Fatalf("GET /debug/pprof/heap without Pprof = %d, want 404", code)
	}
	_, _, on := apiWith(t, Options{Pprof: true, Token: []byte(testToken)}, echoServer("pp2"))
	if code, _, _ := call(t, http.MethodGet, on+"/debug/pprof/heap", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET /debug/pprof/heap without the token = %d, want 401", code)
	}
	if code, _, body := call(t, http.MethodGet, on+"/debug/pprof/goroutine?debug=1", testToken, ""); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("GET /debug/pprof/goroutine?debug=1 = %d %.200s", code, body)
	}
	if code, _, body := call(t, http.MethodGet, on+"/debug/pprof/", testToken, ""); code != http.StatusOK || !strings.Contains(body, "heap") {
		t.Fatalf("GET /debug/pprof/ = %d %.200s", code, body)
	}
	if code, _, body := call(t, http.MethodGet, on+"/debug/pprof/profile?seconds=1", testToken, ""); code != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET /debug/pprof/profile?seconds=1 = %d (%d bytes)", code, len(body))
	}
	if code, _, _ := call(t, http.MethodGet, on+"/debug/pprof/profile?seconds=600", testToken, ""); code != http.StatusBadRequest {
		t.Fatalf("GET /debug/pprof/profile?seconds=600 = %d, want 400", code)
	}
}

// The embedder's counters show in /status and its collectors in
// /metrics.
func TestOptions_CountersAndCollectors(t *testing.T) {
	ctr := prometheus.NewCounter(prometheus.CounterOpts{Name: "game_rooms_opened_total", Help: "Rooms opened."})
	ctr.Add(3)
	_, _, url := apiWith(t, Options{
		Counters:   func(mesh string) map[string]uint64 { return map[string]uint64{"rooms:" + mesh: 3} },
		Collectors: []prometheus.Collector{ctr},
	}, echoServer("cc1"))
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	if code := getJSON(t, url+"/status", &st); code != http.StatusOK || st.Counters["rooms:default"] != 3 {
		t.Fatalf("GET /status = %d counters %v", code, st.Counters)
	}
	if code, _, body := call(t, http.MethodGet, url+"/metrics", "", ""); code != http.StatusOK ||
		!strings.Contains(body, "game_rooms_opened_total 3") || !strings.Contains(body, "zlink_channel_weight") {
		t.Fatalf("GET /metrics = %d without the embedder's or the runtime's metrics", code)
	}
}
