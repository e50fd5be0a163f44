package admin

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

// adminReply is one answer of the admin API.
type adminReply struct {
	status int
	allow  string
	body   ErrorResponse
	raw    string
}

// send sends body (chunked when chunked, else with its length) and decodes
// the JSON error body.
func send(t *testing.T, method, url, body string, chunked bool) adminReply {
	t.Helper()
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // unknown length: sent chunked
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := adminReply{status: resp.StatusCode, allow: resp.Header.Get("Allow"), raw: string(raw)}
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: %d with Content-Type %q: %s", method, url, resp.StatusCode, ct, raw)
		}
		if err := json.Unmarshal(raw, &r.body); err != nil || r.body.Error == "" {
			t.Fatalf("%s %s: %d, error body %q: %v", method, url, resp.StatusCode, raw, err)
		}
	}
	return r
}

func gameNode(o *zlink.Options) {
	o.AddRouteMesh("game").SetRoutingID("srv").Listen("tcp://127.0.0.1:0").
		Channel("match").Server().HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
}

// Bodies that are too large, malformed, truncated, of the wrong shape or
// types, or with unknown fields are refused with a JSON error naming the
// problem, and change nothing; a good body still works afterwards.
func TestAdmin_BadBodies(t *testing.T) {
	_, h, url := healthApp(t, 0, gameNode)
	big := `{"channel":"match","weight":7,"pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, path, body string
		chunked          bool
		status           int
		code, want       string
	}{
		{"announced over the limit", "/weight", big, false, 413, "body_too_large", "bytes announced"},
		{"chunked over the limit", "/weight", big, true, 413, "body_too_large", "too large"},
		{"empty", "/weight", ``, false, 400, "bad_body", "empty body"},
		{"truncated", "/weight", `{"channel":"match","weight":7`, false, 400, "bad_body", "truncated JSON"},
		{"malformed", "/weight", `{channel:"match"}`, false, 400, "bad_body", "malformed JSON at byte"},
		{"not an object", "/weight", `[1,2]`, false, 400, "bad_body", "want a JSON object, got array"},
		{"null", "/weight", `null`, false, 400, "bad_body", "want a JSON object, got null"},
		{"drain: null", "/drain", ` null `, false, 400, "bad_body", "want a JSON object, got null"},
		{"string weight", "/weight", `{"channel":"match","weight":"7"}`, false, 400, "bad_body", `field "weight": want an integer in range, got string`},
		{"huge weight", "/weight", `{"channel":"match","weight":1e30}`, false, 400, "bad_body", `field "weight"`},
		{"numeric channel", "/weight", `{"channel":5,"weight":7}`, false, 400, "bad_body", `field "channel": want a string, got number`},
		{"unknown field", "/weight", `{"channel":"match","weight":7,"wieght":8}`, false, 400, "bad_body", `unknown field "wieght"`},
		{"two values", "/weight", `{"channel":"match","weight":7}{"channel":"match","weight":8}`, false, 400, "bad_body", "data after the JSON object"},
		{"trailing garbage", "/weight", `{"channel":"match","weight":7} x`, false, 400, "bad_body", "data after the JSON object"},
		{"drain: numeric timeout", "/drain", `{"timeout":5}`, false, 400, "bad_body", `field "timeout": want a string`},
		{"drain: unknown field", "/drain", `{"timeout":"1s","force":true}`, false, 400, "bad_body", `unknown field "force"`},
		{"drain: chunked malformed", "/drain", `{"timeout":`, true, 400, "bad_body", "truncated JSON"},
		{"drain: over the limit", "/drain", big, true, 413, "body_too_large", "too large"},
	} {
		r := send(t, http.MethodPost, url+tc.path, tc.body, tc.chunked)
		if r.status != tc.status || r.body.Code != tc.code || !strings.Contains(r.body.Error, tc.want) {
			t.Errorf("%s: %d %+v; want %d %s mentioning %q", tc.name, r.status, r.body, tc.status, tc.code, tc.want)
		}
	}
	st, err := h.Mesh("game").Status(t.Context())
	if err != nil || st.State != routemesh.NodeReady || st.Channels[0].Weight != 100 {
		t.Fatalf("a refused body changed the node: %v weight %d (%v)", st.State, st.Channels[0].Weight, err)
	}
	if r := send(t, http.MethodPost, url+"/weight", `{"channel":"match","weight":7}`, true); r.status != http.StatusOK {
		t.Fatalf("good chunked body after the bad ones: %d %s", r.status, r.raw)
	}
}

// A method an endpoint does not take is answered 405 with the Allow header
// and a JSON error; the endpoint's own method still works.
func TestAdmin_WrongMethods(t *testing.T) {
	_, _, url := healthApp(t, 0, gameNode)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodGet, "/weight", "POST"},
		{http.MethodDelete, "/weight", "POST"},
		{http.MethodPut, "/drain", "POST"},
		{http.MethodGet, "/undrain", "POST"},
		{http.MethodGet, "/relocate", "POST"},
		{http.MethodPatch, "/spots/move", "POST"},
		{http.MethodPost, "/status", "GET, HEAD"},
		{http.MethodDelete, "/tree", "GET, HEAD"},
		{http.MethodPost, "/spots", "GET, HEAD"},
		{http.MethodPost, "/metrics", "GET, HEAD"},
		{http.MethodPut, "/healthz", "GET, HEAD"},
		{http.MethodPost, "/readyz", "GET, HEAD"},
	} {
		r := send(t, tc.method, url+tc.path, "", false)
		if r.status != http.StatusMethodNotAllowed || r.allow != tc.allow || r.body.Code != "method_not_allowed" ||
			!strings.Contains(r.body.Error, tc.method+" "+tc.path) {
			t.Errorf("%s %s: %d Allow %q %+v; want 405 Allow %q", tc.method, tc.path, r.status, r.allow, r.body, tc.allow)
		}
	}
	if r := send(t, http.MethodGet, url+"/status", "", false); r.status != http.StatusOK {
		t.Fatalf("GET /status: %d", r.status)
	}
}

// readJSON's refusals match their sentinels.
func TestReadJSON_Sentinels(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{`{"x":1}`, errBadBody},
		{strings.Repeat(" ", maxBodyBytes+1), errBodyTooLarge},
	} {
		rec := httptest.NewRecorder()
		req, _ := http.NewRequest(http.MethodPost, "/weight", strings.NewReader(tc.body))
		req.Body = http.MaxBytesReader(rec, req.Body, maxBodyBytes)
		var v WeightRequest
		if readJSON(rec, req, "weight", &v, false) {
			t.Fatalf("%q accepted", tc.body)
		}
		var e ErrorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, tc.want.Error()) {
			t.Fatalf("body %q: %s, want %v", tc.body, rec.Body.String(), tc.want)
		}
	}
}

// slowServer serves the admin API of a node not started yet (/healthz
// answers 200) through newAdminServer with short timeouts.
func slowServer(t *testing.T) (*http.Server, string) {
	t.Helper()
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(a)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Fatalf("admin server without a bound: %+v", srv)
	}
	// Long enough that the slow clients are still connected while the
	// others are served, short enough for a test.
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	var conns sync.WaitGroup // every connection's goroutine, until it is closed
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Done()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		conns.Wait()
	})
	return srv, ln.Addr().String()
}

// rawConn opens a TCP connection and writes what a slow client sent so far.
func rawConn(t *testing.T, addr, sent string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, sent); err != nil {
		t.Fatal(err)
	}
	return c
}

// stillOpen reports whether the server has not closed c: a read that times
// out at once means nothing (no EOF) is queued.
func stillOpen(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closedByServer reads c until the server closes it (bounded by 20 s) and
// returns what it received.
func closedByServer(t *testing.T, c net.Conn, what string) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server did not close the connection", what)
	}
	return string(got)
}

// Slow clients (slowloris) are cut off by the server's timeouts: one that
// trickles its headers, one that stalls its body, one idle on a kept-alive
// connection. While they hold their connections, other clients are served;
// oversized headers are refused.
func TestAdmin_SlowClients(t *testing.T) {
	_, addr := slowServer(t)
	base := "http://" + addr
	slowHeader := rawConn(t, addr, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: a")
	slowBody := rawConn(t, addr, "POST /weight HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"chan")
	idle := rawConn(t, addr, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request of the idle client: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)

	// Everyone else is served meanwhile.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range 3 {
		r, err := client.Get(base + "/healthz")
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz beside the slow clients: %v %v", r, err)
		}
		_ = r.Body.Close()
	}
	for name, c := range map[string]net.Conn{"slow header": slowHeader, "slow body": slowBody, "idle": idle} {
		if !stillOpen(c) {
			t.Fatalf("%s: closed before the other clients were served", name)
		}
	}

	if got := closedByServer(t, slowHeader, "slow header"); got != "" {
		t.Fatalf("slow header: the server answered %q", got)
	}
	got := closedByServer(t, slowBody, "slow body")
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"code": "body_timeout"`) {
		t.Fatalf("slow body: the server answered %q, want 408 body_timeout", got)
	}
	closedByServer(t, idle, "idle")

	// Headers over the limit are refused.
	req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("h", maxHeaderBytes+4096))
	r, err := client.Do(req)
	if err != nil || r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("oversized headers: %v %v, want 431", r, err)
	}
	_ = r.Body.Close()
	// And the server still serves.
	if r, err := client.Get(base + "/healthz"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz after the slow clients: %v %v", r, err)
	} else {
		_ = r.Body.Close()
	}
}
