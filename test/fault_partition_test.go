package test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/test/fault"
)

// ledger accounts for every call of a load run: each issued call must end
// exactly once, with a reply or a typed error.
type ledger struct {
	mu       sync.Mutex
	issued   int
	ended    int
	byRID    map[string]int
	errs     map[string]int
	untyped  []error
	marks    map[string]int // successes by RID since the last mark
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

var terminalErrs = []error{zlink.ErrPeerLost, zlink.ErrTimeout, zlink.ErrBusy, zlink.ErrNoTarget}

func startLedger(t *testing.T, n *routemesh.Node, workers int) *ledger {
	return startLedgerPayload(t, n, workers, nil)
}

// startLedgerPayload runs workers that call channel "echo" with payload
// in a loop, each call with a 1 s deadline, until check.
func startLedgerPayload(t *testing.T, n *routemesh.Node, workers int, payload []byte) *ledger {
	l := &ledger{byRID: map[string]int{}, errs: map[string]int{}, marks: map[string]int{}, stop: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.mu.Lock()
				l.issued++
				l.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, rid, err := n.CallFrom(ctx, "echo", "echo", payload)
				cancel()
				l.record(rid, err)
				if errors.Is(err, zlink.ErrNoTarget) {
					time.Sleep(time.Millisecond) // no Server: pace the load, do not spin
				}
			}
		}()
	}
	t.Cleanup(l.end)
	return l
}

func (l *ledger) record(rid string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended++
	if err == nil {
		l.byRID[rid]++
		l.marks[rid]++
		return
	}
	for _, want := range terminalErrs {
		if errors.Is(err, want) {
			l.errs[want.Error()]++
			return
		}
	}
	l.untyped = append(l.untyped, err)
}

// mark restarts the per-RID success count.
func (l *ledger) mark() {
	l.mu.Lock()
	clear(l.marks)
	l.mu.Unlock()
}

func (l *ledger) since(rid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.marks[rid]
}

func (l *ledger) end() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// check ends the run and reconciles the accounts.
func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.end()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.issued != l.ended {
		t.Fatalf("%d calls issued, %d ended", l.issued, l.ended)
	}
	if len(l.untyped) > 0 {
		t.Fatalf("%d calls ended with an untyped error, first: %v", len(l.untyped), l.untyped[0])
	}
	t.Logf("calls %d, served %v, errors %v", l.ended, l.byRID, l.errs)
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
