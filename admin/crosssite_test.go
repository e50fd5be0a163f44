package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// raw sends one request with exactly the given headers (Host overrides
// the request's host) and returns the status and the decoded error body.
func raw(t *testing.T, method, url string, hdr map[string]string, body string) (int, ErrorResponse) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e ErrorResponse
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: %d with Content-Type %q: %s", method, url, resp.StatusCode, ct, b)
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" || e.Code == "" {
			t.Fatalf("%s %s: %d, error body %q without a code: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, e
}

// notChanged fails when the node was drained or its weight changed.
func notChanged(t *testing.T, n *routemesh.Node, what string) {
	t.Helper()
	st, err := n.Status(t.Context())
	if err != nil || st.State != routemesh.NodeReady || st.Channels[0].Weight != 100 {
		t.Fatalf("%s changed the node: %v weight %d (%v)", what, st.State, st.Channels[0].Weight, err)
	}
}

// A web page cannot change the node: a POST that is not JSON (the form
// and no-cors fetch content types, none at all) is refused, body or not,
// and so is a JSON one from a foreign Origin. Each refusal is 403 with a
// code and changes nothing; the admin's own origin and JSON with a
// charset are served.
func TestCrossSite_WritesNeedJSONFromNoForeignOrigin(t *testing.T) {
	_, h, url := apiWith(t, Options{AllowedOrigins: []string{"https://ops.example"}}, echoServer("cs1"))
	n := h.Mesh("default")
	host := strings.TrimPrefix(url, "http://")
	// The attack: a page at evil.example posts text/plain.
	if code, e := raw(t, http.MethodPost, url+"/drain", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, ``); code != http.StatusForbidden || e.Code != "content_type" {
		t.Fatalf("POST /drain text/plain from evil.example = %d %+v, want 403 content_type", code, e)
	}
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
		code             string
	}{
		{"no content type, no body", "/drain", ``, map[string]string{}, "content_type"},
		{"no content type, a body", "/weight", `{"channel":"match","weight":7}`, map[string]string{}, "content_type"},
		{"form", "/weight", `channel=match&weight=7`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "content_type"},
		{"multipart", "/undrain", ``, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "content_type"},
		{"text/plain JSON", "/weight", `{"channel":"match","weight":7}`, map[string]string{"Content-Type": "text/plain"}, "content_type"},
		{"json-ish", "/weight", `{"channel":"match","weight":7}`, map[string]string{"Content-Type": "application/jsonx"}, "content_type"},
		{"foreign origin", "/weight", `{"channel":"match","weight":7}`, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, "forbidden_origin"},
		{"foreign origin drain", "/drain", ``, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, "forbidden_origin"},
		{"null origin", "/drain", ``, map[string]string{"Content-Type": "application/json", "Origin": "null"}, "forbidden_origin"},
		{"own host, other scheme", "/drain", ``, map[string]string{"Content-Type": "application/json", "Origin": "https://" + host}, "forbidden_origin"},
		{"relocate", "/relocate?to=x", ``, map[string]string{"Content-Type": "text/plain"}, "content_type"},
		{"spot move", "/spots/move?kind=k&id=i&to=x", ``, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, "forbidden_origin"},
	} {
		if code, e := raw(t, http.MethodPost, url+tc.path, tc.hdr, tc.body); code != http.StatusForbidden || e.Code != tc.code {
			t.Errorf("%s: POST %s = %d %+v, want 403 %s", tc.name, tc.path, code, e, tc.code)
		}
	}
	notChanged(t, n, "a refused cross-site request")
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json"},
		{"Content-Type": "application/json; charset=utf-8", "Origin": "http://" + host},
		{"Content-Type": "Application/JSON", "Origin": "https://ops.example"},
	} {
		if code, e := raw(t, http.MethodPost, url+"/weight", hdr, `{"channel":"match","weight":7}`); code != http.StatusOK {
			t.Fatalf("POST /weight %v = %d %+v, want 200", hdr, code, e)
		}
	}
}

// Without a token, a request whose Host is not loopback is refused, GETs
// and health probes too (a DNS-rebound name pointing at 127.0.0.1); an
// allowed host is served. With a token every Host is served.
func TestCrossSite_HostMustBeLoopbackWithoutAToken(t *testing.T) {
	_, h, url := apiWith(t, Options{AllowedHosts: []string{"game-1.internal"}}, echoServer("hs1"))
	for _, path := range []string{"/status", "/tree", "/spots", "/metrics", "/healthz", "/readyz", "/ui/", "/ui/events", "/nothing"} {
		for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.evil.example"} {
			if code, e := raw(t, http.MethodGet, url+path, map[string]string{"Host": host}, ``); code != http.StatusForbidden || e.Code != "forbidden_host" {
				t.Errorf("GET %s Host %q = %d %+v, want 403 forbidden_host", path, host, code, e)
			}
		}
	}
	if code, e := raw(t, http.MethodPost, url+"/drain", map[string]string{"Host": "evil.example", "Content-Type": "application/json"}, ``); code != http.StatusForbidden || e.Code != "forbidden_host" {
		t.Fatalf("POST /drain Host evil.example = %d %+v", code, e)
	}
	notChanged(t, h.Mesh("default"), "a refused host")
	for _, host := range []string{"localhost", "localhost:9100", "LOCALHOST", "admin.localhost", "127.0.0.1", "127.1.2.3:80", "[::1]:9100", "game-1.internal", "GAME-1.internal:8080"} {
		if code, e := raw(t, http.MethodGet, url+"/status", map[string]string{"Host": host}, ``); code != http.StatusOK {
			t.Errorf("GET /status Host %q = %d %+v, want 200", host, code, e)
		}
	}
}

// With a token every Host is served, and the token does not lift the
// cross-site checks.
func TestCrossSite_TokenServesEveryHost(t *testing.T) {
	_, _, tokURL := apiWith(t, Options{Token: []byte(testToken)}, echoServer("hs2"))
	if code, e := raw(t, http.MethodGet, tokURL+"/status", map[string]string{"Host": "game-2.example"}, ``); code != http.StatusOK {
		t.Fatalf("GET /status with a token set, Host game-2.example = %d %+v", code, e)
	}
	if code, e := raw(t, http.MethodPost, tokURL+"/drain", map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "text/plain"}, ``); code != http.StatusForbidden || e.Code != "content_type" {
		t.Fatalf("POST /drain text/plain with the token = %d %+v", code, e)
	}
}

// CheckExposure: loopback addresses pass without a token; reachable ones
// need one.
func TestCheckExposure(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:9100", "[::1]:0"} {
		if err := CheckExposure(addr, Options{}); err != nil {
			t.Errorf("%s without a token: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:9100", ":9100", "10.1.2.3:9100", "[::]:0", "game.example:80"} {
		if err := CheckExposure(addr, Options{}); !errors.Is(err, ErrExposed) {
			t.Errorf("%s without a token: %v, want ErrExposed", addr, err)
		}
		if err := CheckExposure(addr, Options{Token: []byte(testToken)}); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
	}
	if err := CheckExposure("no-port", Options{}); err == nil || errors.Is(err, ErrExposed) {
		t.Errorf("unparsable address: %v", err)
	}
}
