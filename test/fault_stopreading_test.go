package test

import (
	"runtime"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

// patientLiveness never gives a silent peer up within a test: the peer
// that stops reading keeps sending as if all were well.
var patientLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 100000, LastHeard: time.Hour}

// otherLiveness is the other Clients': the defaults (a lost Server
// noticed after 2.5 s of silence).
var otherLiveness = routemesh.DefaultLivenessConfig()

// TestFault_PeerThatStopsReadingSparesOtherPeers: a Server S has three
// Clients. One, P, stops reading its socket (the proxy between them holds
// S → P; P itself is patient and keeps calling with 256 KiB payloads whose
// replies pile up). S's writes to P back up until its send timeout fails
// P's connection; meanwhile the two other Clients are served without a
// single error. After the heal P is served again; every call of the three
// is accounted for and the goroutines come back to their baseline.
//
// S runs the default liveness and send timeout, as do the other Clients.
// Each of S's pipes writes to its own connection, so the write waiting out
// its timeout on P's holds up no other Client. (When S wrote to every
// inbound peer through zmq4's router, under one lock, the others waited
// too, and with a 5 s send timeout, the old default, they lost S while P
// was stuck.)
func TestFault_PeerThatStopsReadingSparesOtherPeers(t *testing.T) {
	o := zlink.NewOptions()
	o.AddRouteMesh("stall").SetRoutingID("s").
		ConfigureRouterSocket(routemesh.SocketConfig{SendHWM: 64}).
		Channel("echo").Server().HandleRequest("echo", echo)
	s := startHost(t, o).Mesh("stall")
	proxy, err := fault.New(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	client := func(rid, endpoint string, live routemesh.LivenessConfig) *routemesh.Node {
		o := zlink.NewOptions()
		o.AddRouteMesh("stall").SetRoutingID(rid).ConfigureLiveness(live).AddPeer(endpoint, "s").Channel("echo").Client()
		n := startHost(t, o).Mesh("stall")
		waitPeerState(t, n, "s", routemesh.PeerReady)
		return n
	}
	p := client("p", proxy.Endpoint(), patientLiveness)
	b := client("b", s.Endpoint(), otherLiveness)
	c := client("c", s.Endpoint(), otherLiveness)
	base := runtime.NumGoroutine()

	lp := startLedgerPayload(t, p, 32, make([]byte, 256<<10))
	lb, lc := startLedger(t, b, 2), startLedger(t, c, 2)
	waitFor(t, "every client served", 15*time.Second, func() bool {
		return lp.since("s") > 20 && lb.since("s") > 20 && lc.since("s") > 20
	})
	stalled := time.Now()
	proxy.CutDown() // P reads nothing more
	lb.mark()
	lc.mark()
	// P is patient: only S's send timeout ends P's connection (and P
	// dials again through the proxy).
	waitFor(t, "S failing P's connection", 15*time.Second, func() bool { return proxy.Accepted() > 1 })
	dropped := time.Since(stalled)
	waitFor(t, "the other clients served while P's connection was stuck", 15*time.Second, func() bool {
		return lb.since("s") > 100 && lc.since("s") > 100
	})
	lb.noErrors(t, "b")
	lc.noErrors(t, "c")

	proxy.Heal()
	waitPeerState(t, s, "p", routemesh.PeerReady)
	lp.mark()
	waitFor(t, "P served again after the heal", 10*time.Second, func() bool { return lp.since("s") > 20 })
	recovered := time.Since(stalled)
	lp.check(t)
	lb.check(t)
	lc.check(t)
	lb.noErrors(t, "b")
	lc.noErrors(t, "c")
	g := goroutinesBack(t, base)
	t.Logf("S failed the stuck connection %v after P stopped reading; P served again %v after; b %d and c %d calls without an error; goroutines %d (baseline %d)",
		dropped.Round(time.Millisecond), recovered.Round(time.Millisecond), lb.served("s"), lc.served("s"), g, base)
}
