package admin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
)

const testToken = "0123456789abcdef-admin-token"

// healthLeaks are the goroutines zmq4 and protoactor leave behind by design.
var healthLeaks = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*routerQReader).listen"),
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*qreader).listen"),
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*socket).connReaper"),
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"),
	goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*Conn).read"),
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.(*ActorSystem).Shutdown.func1"),
	goleak.IgnoreAnyFunction("github.com/lithammer/shortuuid/v4.init.0"),
	goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
}

// healthApp runs one in-process node (configured by build) behind the admin
// API with the given peer grace.
func healthApp(t testing.TB, grace time.Duration, build func(o *zlink.Options)) (*API, *zlink.Host, string) {
	t.Helper()
	return apiWith(t, Options{Health: zlink.HealthConfig{PeerGrace: grace}}, build)
}

// apiWith runs one in-process node (configured by build) behind the admin
// API with opts, on a loopback test server.
func apiWith(t testing.TB, opts Options, build func(o *zlink.Options)) (*API, *zlink.Host, string) {
	t.Helper()
	// Registered first, so it runs after every other cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t, healthLeaks...) })
	o := zlink.NewOptions()
	build(o)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.SetHost(h)
	srv := httptest.NewServer(a)
	t.Cleanup(func() {
		srv.Close()
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		if err := h.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return a, h, srv.URL
}

// probe GETs path and decodes the health body.
func probe(t *testing.T, base, path string) (int, HealthResponse) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var body HealthResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	return resp.StatusCode, body
}

// waitProbe waits until path answers code, failing with the last body.
func waitProbe(t *testing.T, base, path string, code int, d time.Duration) HealthResponse {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, body := probe(t, base, path)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %+v, want %d within %s", path, got, body, code, d)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}
}

// deadEndpoint is a loopback endpoint nobody listens on.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "tcp://" + l.Addr().String()
	_ = l.Close()
	return ep
}

func TestAdminHealth_HealthyNodeIsReadyAndLive(t *testing.T) {
	_, _, base := healthApp(t, time.Second, func(o *zlink.Options) {
		o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID("ok1")
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := probe(t, base, path)
		if code != http.StatusOK || !body.Live || !body.Ready || body.Status != "ok" || len(body.Reasons) != 0 || body.Meshes["default"] != "ready" {
			t.Fatalf("GET %s = %d %+v", path, code, body)
		}
	}
}

func TestAdminHealth_ManualPeerNeverUpFailsReadinessAfterGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	dead := deadEndpoint(t)
	_, _, base := healthApp(t, grace, func(o *zlink.Options) {
		o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID("lonely").AddPeer(dead, "ghost")
	})
	body := waitProbe(t, base, "/readyz", http.StatusServiceUnavailable, 10*time.Second)
	if body.Ready || !body.Live || body.Status != "not_ready" || len(body.Reasons) != 1 ||
		!strings.Contains(body.Reasons[0], "peer ghost") || !strings.Contains(body.Reasons[0], "NotConnected for") {
		t.Fatalf("/readyz body %+v", body)
	}
	// A lost peer is no reason to restart the process.
	if code, body := probe(t, base, "/healthz"); code != http.StatusOK || !body.Live {
		t.Fatalf("/healthz = %d %+v", code, body)
	}
}

func TestAdminHealth_DrainingIsNotReadyButLive(t *testing.T) {
	_, h, base := healthApp(t, time.Second, func(o *zlink.Options) {
		o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID("dr1")
	})
	waitProbe(t, base, "/readyz", http.StatusOK, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Mesh("default").Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	code, body := probe(t, base, "/readyz")
	if code != http.StatusServiceUnavailable || body.Ready || len(body.Reasons) != 1 || body.Reasons[0] != "mesh default: draining" {
		t.Fatalf("/readyz while draining = %d %+v", code, body)
	}
	if code, body := probe(t, base, "/healthz"); code != http.StatusOK || !body.Live {
		t.Fatalf("/healthz while draining = %d %+v", code, body)
	}
}

func TestAdminHealth_StoppingAndStartingProcess(t *testing.T) {
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	if code, body := probe(t, srv.URL, "/readyz"); code != http.StatusServiceUnavailable || body.Status != "starting" {
		t.Fatalf("/readyz before start = %d %+v", code, body)
	}
	if code, body := probe(t, srv.URL, "/healthz"); code != http.StatusOK || !body.Live {
		t.Fatalf("/healthz before start = %d %+v", code, body)
	}
	a.MarkStopping()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := probe(t, srv.URL, path); code != http.StatusServiceUnavailable || body.Status != "stopping" || len(body.Reasons) != 1 {
			t.Fatalf("GET %s while stopping = %d %+v", path, code, body)
		}
	}
}

// Each endpoint that changes the node refuses no token and a wrong one
// (401, nothing changed) and accepts the right one; read-only endpoints
// stay open.
func TestAdmin_MutatingEndpointsNeedTheToken(t *testing.T) {
	_, h, url := apiWith(t, Options{Token: []byte(testToken)}, func(o *zlink.Options) {
		o.AddRouteMesh("game").SetRoutingID("srv").Listen("tcp://127.0.0.1:0").
			Channel("match").Server().HandleRequest("echo", func(c *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	})
	do := func(method, path, body, token string) int {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			var e ErrorResponse
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
