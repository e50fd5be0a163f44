package test

import (
	"context"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

// ledger is a fault.Ledger calling channel "echo" from one node, with
// the test's helpers.
type ledger struct{ *fault.Ledger }

var terminalErrs = []error{zlink.ErrPeerLost, zlink.ErrTimeout, zlink.ErrBusy, zlink.ErrNoTarget}

func startLedger(t *testing.T, n *routemesh.Node, workers int) *ledger {
	return startLedgerPayload(t, n, workers, nil)
}

// startLedgerPayload runs workers that call channel "echo" with payload
// in a loop, each call with a 1 s deadline, until check.
func startLedgerPayload(t *testing.T, n *routemesh.Node, workers int, payload []byte) *ledger {
	l := &ledger{fault.NewLedger(terminalErrs...).Run(workers, time.Second, func(ctx context.Context) (string, error) {
		_, rid, err := n.CallFrom(ctx, "echo", "echo", payload)
		return rid, err
	})}
	t.Cleanup(l.Stop)
	return l
}

func (l *ledger) mark()                { l.Mark() }
func (l *ledger) since(rid string) int { return l.Since(rid) }

// check ends the run and reconciles the accounts.
func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.Stop()
	a := l.Account()
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("calls %d, served %v, errors %v", a.Ended, a.ByRID, a.Errs)
}

// TestFault_PartitionOfOneServer: a client talks to two Servers, one
// through a proxy. The proxy black-holes the link — both directions, or
// one — while calls run; the client must notice through liveness, move
// its calls to the other Server, and take the first back after the heal.
// Every call ends once, with a reply or a typed error.
func TestFault_PartitionOfOneServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*fault.Proxy)
	}{
		{"symmetric", (*fault.Proxy).Partition},
		{"server to client lost", (*fault.Proxy).CutDown},
		{"client to server lost", (*fault.Proxy).CutUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := func(rid string) *routemesh.Node {
				o := zlink.NewOptions()
				o.AddRouteMesh("fault").SetRoutingID(rid).ConfigureLiveness(fastLiveness).
					Channel("echo").Server().HandleRequest("echo", echo)
				return startHost(t, o).Mesh("fault")
			}
			s1, s2 := server("s1"), server("s2")
			proxy, err := fault.New(s1.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			o := zlink.NewOptions()
			o.AddRouteMesh("fault").SetRoutingID("c").ConfigureLiveness(fastLiveness).
				AddPeer(proxy.Endpoint(), "s1").AddPeer(s2.Endpoint(), "s2").Channel("echo").Client()
			c := startHost(t, o).Mesh("fault")
			waitPeerState(t, c, "s1", routemesh.PeerReady)
			waitPeerState(t, c, "s2", routemesh.PeerReady)

			load := startLedger(t, c, 4)
			waitFor(t, "both Servers serving", 5*time.Second, func() bool { return load.since("s1") > 20 && load.since("s2") > 20 })
			tc.fault(proxy)
			waitFor(t, "the client losing s1", 5*time.Second, func() bool {
				p, ok := status(t, c).Peer("s1")
				return !ok || p.State != routemesh.PeerReady
			})
			load.mark()
			waitFor(t, "calls served by s2 during the fault", 5*time.Second, func() bool { return load.since("s2") > 50 })
			if n := load.since("s1"); n != 0 {
				t.Fatalf("s1 served %d calls while cut off", n)
			}
			proxy.Heal()
			waitPeerState(t, c, "s1", routemesh.PeerReady)
			load.mark()
			waitFor(t, "s1 serving again after the heal", 5*time.Second, func() bool { return load.since("s1") > 20 })
			load.check(t)
			if st := status(t, s1); st.State != routemesh.NodeReady {
				t.Fatalf("s1 state %v", st.State)
			}
		})
	}
}
