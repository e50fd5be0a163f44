package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

const testToken = "0123456789abcdef-admin-token"

// Each endpoint that changes the node refuses no token and a wrong one
// (401, nothing changed) and accepts the right one; read-only endpoints
// stay open.
func TestAdmin_MutatingEndpointsNeedTheToken(t *testing.T) {
	a, h, url := healthApp(t, 0, func(o *zlink.Options) {
		o.AddRouteMesh("game").SetRoutingID("srv").Listen("tcp://127.0.0.1:0").
			Channel("match").Server().HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	})
	a.token = []byte(testToken)
	do := func(method, path, body, token string) int {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			var e errorResponse
			if resp.Header.Get("WWW-Authenticate") == "" || json.NewDecoder(resp.Body).Decode(&e) != nil || e.Code != "unauthorized" {
				t.Fatalf("%s %s: 401 without WWW-Authenticate or code unauthorized (%+v)", method, path, e)
			}
		}
		return resp.StatusCode
	}
	for _, ep := range []struct{ path, body string }{
		{"/weight", `{"channel":"match","weight":7}`},
		{"/drain", `{"timeout":"1s"}`},
		{"/undrain", ``},
	} {
		for _, tok := range []string{"", "wrong-token-of-enough-length"} {
			if code := do(http.MethodPost, ep.path, ep.body, tok); code != http.StatusUnauthorized {
				t.Fatalf("POST %s with token %q: %d, want 401", ep.path, tok, code)
			}
		}
	}
	if st, _ := h.Mesh("game").Status(t.Context()); st.State != routemesh.NodeReady || st.Channels[0].Weight != 100 {
		t.Fatalf("a refused request changed the node: %v weight %d", st.State, st.Channels[0].Weight)
	}
	if code := do(http.MethodPost, "/weight", `{"channel":"match","weight":7}`, testToken); code != http.StatusOK {
		t.Fatalf("POST /weight with the token: %d", code)
	}
	if code := do(http.MethodPost, "/undrain", ``, testToken); code != http.StatusOK {
		t.Fatalf("POST /undrain with the token: %d", code)
	}
	for _, path := range []string{"/status", "/tree", "/metrics", "/healthz", "/readyz"} {
		if code := do(http.MethodGet, path, "", ""); code != http.StatusOK {
			t.Fatalf("GET %s without a token: %d, want 200", path, code)
		}
	}
}

func TestAdmin_ExposureNeedsAToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:9100", "[::1]:0"} {
		if err := checkAdminExposure(addr, nil); err != nil {
			t.Errorf("%s without a token: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:9100", ":9100", "10.1.2.3:9100", "[::]:0"} {
		err := checkAdminExposure(addr, nil)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--admin-token-file") {
			t.Errorf("%s without a token: %v, want a usage error naming --admin-token-file", addr, err)
		}
		if err := checkAdminExposure(addr, []byte(testToken)); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
	}
}

func TestAdmin_TokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := readAdminToken(write("ok", testToken+"\n")); err != nil || string(tok) != testToken {
		t.Fatalf("good file: %q %v", tok, err)
	}
	for name, content := range map[string]string{"short": "tooshort", "empty": "\n"} {
		if _, err := readAdminToken(write(name, content)); err == nil {
			t.Errorf("%s token accepted", name)
		}
	}
	if _, err := readAdminToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}
