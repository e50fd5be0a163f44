package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/metrics"
	"github.com/zlink-go/zlink/routemesh"
)

// A Server's node counts what it served: 1,000 requests driven into it
// read back from its /metrics by channel, packet and result, with one-way
// messages, handler errors, and packet names it has no handler for under
// packet="_unknown" (never as labels of their own).
func TestCollector_ServerSideCounts(t *testing.T) {
	so := zlink.NewOptions()
	srvB := so.AddRouteMesh("game").SetRoutingID("srv").Channel("match").Server()
	srvB.HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
	srvB.HandleRequest("fail", func(*routemesh.Context, []byte) ([]byte, error) { return nil, errors.New("no") })
	notes := make(chan struct{}, 64)
	srvB.HandleSend("note", func(*routemesh.Context, []byte) { notes <- struct{}{} })
	hs := start(t, so)
	srv := hs.Mesh("game")
	co := zlink.NewOptions()
	co.AddRouteMesh("game").SetRoutingID("cli").AddPeer(srv.Endpoint(), "srv").Channel("match").Client()
	cli := start(t, co).Mesh("game")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cli.WaitReady(ctx, "match"); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if _, err := cli.Call(ctx, "match", "echo", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := cli.Call(ctx, "match", "fail", nil); !errors.Is(err, zlink.ErrHandler) {
			t.Fatalf("fail: %v", err)
		}
	}
	for i := range 7 {
		if _, err := cli.Call(ctx, "match", fmt.Sprintf("stranger-%d", i), nil); !errors.Is(err, zlink.ErrUnknownPacket) {
			t.Fatalf("unknown packet: %v", err)
		}
	}
	for range 20 {
		if err := cli.Send(ctx, "match", "note", nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		select {
		case <-notes:
		case <-ctx.Done():
			t.Fatal("the one-way messages were not all handled")
		}
	}

	reg := prometheus.NewRegistry()
	c := metrics.For(hs)
	reg.MustRegister(c)
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer web.Close()
	text := func() string {
		resp, err := http.Get(web.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// A send's handler may still be finishing its count when the test
	// reads: wait for the condition, not for time.
	want := []string{
		`zlink_server_requests_total{channel="match",mesh="game",packet="echo",result="ok"} 1000`,
		`zlink_server_requests_total{channel="match",mesh="game",packet="fail",result="handler"} 3`,
		`zlink_server_requests_total{channel="match",mesh="game",packet="_unknown",result="unknown_packet"} 7`,
		`zlink_server_sends_total{channel="match",mesh="game",packet="note"} 20`,
		`zlink_server_request_duration_seconds_count{channel="match",mesh="game",packet="echo"} 1000`,
		`zlink_server_queue_seconds_count{channel="match",mesh="game",packet="echo"} 1000`,
		`zlink_server_handlers_running{channel="match",mesh="game"} 0`,
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		body = text()
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				missing = w
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(body, "stranger-") {
		t.Fatal("a packet name without a handler became a label")
	}
}
