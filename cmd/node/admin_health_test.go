package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
)

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
// handlers with the given peer grace.
func healthApp(t testing.TB, grace time.Duration, build func(o *zlink.Options)) (*app, *zlink.Host, string) {
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
	a := newApp(zerolog.Nop())
	for _, n := range h.Meshes() {
		a.addMesh(n.Mesh(), newBuiltins())
	}
	a.started(h)
	srv := httptest.NewServer(a.routes(zlink.HealthConfig{PeerGrace: grace}))
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
func probe(t *testing.T, base, path string) (int, healthResponse) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var body healthResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
	return resp.StatusCode, body
}

// waitProbe waits until path answers code, failing with the last body.
func waitProbe(t *testing.T, base, path string, code int, d time.Duration) healthResponse {
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
	a := newApp(zerolog.Nop())
	srv := httptest.NewServer(a.handler())
	defer srv.Close()
	if code, body := probe(t, srv.URL, "/readyz"); code != http.StatusServiceUnavailable || body.Status != "starting" {
		t.Fatalf("/readyz before start = %d %+v", code, body)
	}
	if code, body := probe(t, srv.URL, "/healthz"); code != http.StatusOK || !body.Live {
		t.Fatalf("/healthz before start = %d %+v", code, body)
	}
	a.stopping.Store(true)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := probe(t, srv.URL, path); code != http.StatusServiceUnavailable || body.Status != "stopping" || len(body.Reasons) != 1 {
			t.Fatalf("GET %s while stopping = %d %+v", path, code, body)
		}
	}
}
