package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAdminBodies sends arbitrary bodies to the admin endpoints that read
// one (POST /weight, POST /drain) of a running node. Whatever the body, the
// answer is a success only for a valid JSON body, or a JSON error with a
// 4xx status: never a panic, never a 500. The seeds run in plain go test;
// run longer with
// go test -run '^$' -fuzz '^FuzzAdminBodies$' -fuzztime 60s ./cmd/node/
func FuzzAdminBodies(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"channel":"match","weight":7}`, `{"channel":"match","weight":-1}`,
		`{"channel":"match","weight":10001}`, `{"channel":"nope","weight":1}`, `{"channel":"match","weight":"7"}`,
		`{"channel":"match","weight":1e400}`, `{"channel":"match","weight":7,"x":1}`, `{"channel":"match","weight":7}{}`,
		`{"timeout":"1s"}`, `{"timeout":"-1s"}`, `{"timeout":"99999h"}`, `{"timeout":5}`, `{"timeout":"1s"`,
		`{"channel":"\ud800","weight":7}`, "{\"channel\":\"m\x00\",\"weight\":7}", `{"Channel":"match","WEIGHT":7}`,
		strings.Repeat("[", 10000), `{"channel":"` + strings.Repeat("c", maxBodyBytes) + `"}`,
	} {
		f.Add("/weight", []byte(s))
		f.Add("/drain", []byte(s))
	}
	a, _, _ := healthApp(f, 0, gameNode)
	h := http.Handler(a)
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		if path != "/weight" && path != "/drain" {
			return
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Host = "localhost"
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		code := rec.Code
		switch {
		case code == http.StatusOK:
			if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) { // /drain's body is optional
				t.Fatalf("POST %s %q: 200 for invalid JSON", path, body)
			}
		case code >= 400 && code < 500, code == http.StatusGatewayTimeout:
			var e ErrorResponse
			if rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil {
				t.Fatalf("POST %s %q: %d without a JSON body: %q", path, body, code, rec.Body)
			}
			if e.Error == "" && code != http.StatusGatewayTimeout {
				t.Fatalf("POST %s %q: %d with an empty error", path, body, code)
			}
		default:
			t.Fatalf("POST %s %q: %d %s", path, body, code, rec.Body)
		}
	})
}
