package admin

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/cdptest"
)

// The page of a node that calls a channel renders the channel's Servers
// with their weights and shares: headless Chromium loads /ui while the
// node calls two Servers, and the DOM shows them.
func TestUI_BrowserRendersChannelServers(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, healthLeaks...) }) // runs last
	cdptest.FindChromium(t)                                    // first: without a browser the test fails at once, saying how to get one
	b := uiHost(t, echoServer("b"))
	c := uiHost(t, echoServer("c"))
	bn, cn := b.Mesh("default"), c.Mesh("default")
	a := uiHost(t, func(o *zlink.Options) {
		o.AddRouteMesh("default").Listen("tcp://127.0.0.1:0").SetRoutingID("a").
			AddPeer(bn.Endpoint(), "b").AddPeer(cn.Endpoint(), "c").
			Channel("match").Client()
	})
	an := a.Mesh("default")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cn.SetWeight(ctx, "match", 300); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(a, Options{}))
	t.Cleanup(srv.Close)
	srvC := httptest.NewServer(Handler(c, Options{}))
	t.Cleanup(srvC.Close)
	browser := cdptest.Start(t) // closed before srv and srvC: their event streams end first

	// Traffic for as long as the browser looks (errors while the peers
	// connect are expected: the page shows them too).
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		pace := time.NewTicker(time.Millisecond) // leaves the browser some CPU
		defer pace.Stop()
		for trafficCtx.Err() == nil {
			_, _ = an.Call(trafficCtx, "match", "echo", nil)
			select {
			case <-pace.C:
			case <-trafficCtx.Done():
			}
		}
	})
	defer wg.Wait()
	defer stopTraffic()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var snap struct {
			Meshes []struct {
				Channels []uiChannel `json:"channels"`
			} `json:"meshes"`
		}
		getJSON(t, srv.URL+"/ui/snapshot", &snap)
		if len(snap.Meshes) == 1 && len(snap.Meshes[0].Channels) == 1 && len(snap.Meshes[0].Channels[0].Servers) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no selection among b and c within 15s: %+v", snap)
		}
		<-time.After(20 * time.Millisecond) // poll interval of a condition wait
	}

	page, err := browser.OpenPage(ctx, srv.URL+"/ui/", 1360, 900)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ what, expr string }{
		{"the stream is live", `document.getElementById('conn').textContent === 'live'`},
		{"b with weight 100", `document.querySelector('[data-channel="match"][data-role="client"] tr.server[data-rid="b"] td.weight')?.textContent === '100'`},
		{"c with weight 300", `document.querySelector('[data-channel="match"] tr.server[data-rid="c"] td.weight')?.textContent === '300'`},
		{"a share per Server", `[...document.querySelectorAll('[data-channel="match"] tr.server .share')].filter(e => /^\d+(\.\d)?%$/.test(e.textContent)).length === 2`},
		{"a share bar", `document.querySelector('[data-channel="match"] tr.server .bar .fill') !== null`},
		{"the sample count", `/share of the last \d+ recorded selections/.test(document.querySelector('[data-channel="match"]').textContent)`},
		{"both peers Ready on the graph", `document.querySelectorAll('g.peer[data-state="Ready"]').length === 2`},
		{"the select-one latency", `/p50 ≤/.test(document.querySelector('[data-mesh="default"] .facts').textContent)`},
		{"the tree", `document.querySelector('#tree li[data-path="/host/mesh:default"]') !== null`},
	}
	checkPage(ctx, t, page, time.Now().Add(15*time.Second), checks)

	// A Server's page counts what it served.
	pageC, err := browser.OpenPage(ctx, srvC.URL+"/ui/", 1360, 900)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(ctx, t, pageC, time.Now().Add(15*time.Second), []struct{ what, expr string }{
		{"the requests c served", `Number(document.querySelector('[data-mesh="default"] .facts .served-requests')?.textContent) > 0`},
	})
}

// checkPage waits, until deadline, for each check's expression to hold on
// page.
func checkPage(ctx context.Context, t *testing.T, page *cdptest.Page, deadline time.Time, checks []struct{ what, expr string }) {
	t.Helper()
	for _, c := range checks {
		for {
			var ok bool
			err := page.Eval(ctx, "!!("+c.expr+")", &ok)
			if err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				var text string
				_ = page.Eval(ctx, "document.body.innerText", &text)
				t.Fatalf("the page does not show %s (%v); page text:\n%s", c.what, err, text)
			}
			<-time.After(50 * time.Millisecond) // poll interval of a condition wait
		}
	}
}
