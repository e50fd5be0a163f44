package test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// overloadLiveness is the overload tests' liveness: they are about
// admission, not loss detection. A storm of 1 MiB requests queues
// megabytes ahead of the client's heartbeats, and the Server answers a
// heartbeat only once it has read everything before it: under -race on a
// loaded machine that took longer than fastLiveness' heartbeat gap
// (5 × 50 ms), the client declared the Server lost, and the next calls
// ended with ErrNoTarget. With this gap (10 s) and the send timeout
// derived from it, only a Server that stopped reading would be lost.
var overloadLiveness = routemesh.LivenessConfig{Interval: 500 * time.Millisecond, MaxGap: 20, LastHeard: 10 * time.Second}

// overloadPair is a Server with a slow channel (one handler at a time,
// small budgets) and a fast channel on the same node, and a client. Each
// slow handler runs until work's channel yields (or is closed), or until
// the test ends.
func overloadPair(t *testing.T, budgetMsgs, budgetBytes int64, work func() <-chan time.Time) (*zlink.Host, *routemesh.Node) {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	o := zlink.NewOptions()
	m := o.AddRouteMesh("load").SetRoutingID("srv").ConfigureLiveness(overloadLiveness).
		ConfigureRouterSocket(routemesh.SocketConfig{MailboxMessageBudget: budgetMsgs, MailboxByteBudget: budgetBytes})
	m.Channel("slow").Server().SetConcurrency(1).HandleRequest("work", func(c *routemesh.Context, p []byte) ([]byte, error) {
		select {
		case <-work(): // the handler's own work time
		case <-release:
		}
		return nil, nil
	})
	m.Channel("fast").Server().HandleRequest("echo", echo)
	hs := startHost(t, o)
	srv := hs.Mesh("load")
	oc := zlink.NewOptions()
	oc.AddRouteMesh("load").SetRoutingID("cli").ConfigureLiveness(overloadLiveness).AddPeer(srv.Endpoint(), "srv").
		Channel("slow").Client().Channel("fast").Client()
	cli := startHost(t, oc).Mesh("load")
	waitPeerState(t, cli, "srv", routemesh.PeerReady)
	return hs, cli
}

// budgetWatch samples the slow owner's mailbox against its budgets while
// a load runs and records any sample over budget.
func budgetWatch(t *testing.T, hs *zlink.Host, stop chan struct{}) func() (samples int, worst supervisor.MailboxStats) {
	var mu sync.Mutex
	var n int
	var worst supervisor.MailboxStats
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			node, ok := findNode(hs.Tree(), "channel:slow")
			if !ok {
				continue
			}
			mu.Lock()
			n++
			mb := node.Mailbox
			if mb.Depth > worst.Depth {
				worst.Depth, worst.MaxMessages = mb.Depth, mb.MaxMessages
			}
			if mb.Bytes > worst.Bytes {
				worst.Bytes, worst.MaxBytes = mb.Bytes, mb.MaxBytes
			}
			mu.Unlock()
		}
	}()
	return func() (int, supervisor.MailboxStats) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return n, worst
	}
}

// A slow consumer: arrivals far faster than the handler. Callers get
// ErrBusy instead of queueing without bound, the owner never holds more
// than its budget, and another channel of the same node is unaffected.
func TestFault_SlowConsumerAnswersBusyAndSparesOtherChannels(t *testing.T) {
	hs, cli := overloadPair(t, 8, 64<<20, func() <-chan time.Time { return time.After(20 * time.Millisecond) })
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	watch := budgetWatch(t, hs, stop)
	var busy, ok, other atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { halt(); wg.Wait() })
	for range 32 { // far more callers than the owner's budget
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := cli.Call(ctxT(t, 5*time.Second), "slow", "work", nil)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, zlink.ErrBusy):
					busy.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	// Meanwhile the fast channel answers every call.
	for i := 0; i < 200; i++ {
		if _, err := cli.Call(ctxT(t, 5*time.Second), "fast", "echo", nil); err != nil {
			t.Fatalf("fast channel call %d during the overload: %v", i, err)
		}
	}
	waitFor(t, "callers refused with ErrBusy", 10*time.Second, func() bool { return busy.Load() > 50 })
	halt()
	wg.Wait()
	samples, worst := watch()
	if other.Load() != 0 {
		t.Fatalf("%d slow calls ended with something other than a reply or ErrBusy", other.Load())
	}
	if samples == 0 || worst.MaxMessages != 8 || worst.Depth > worst.MaxMessages {
		t.Fatalf("slow owner's mailbox: %d samples, worst %+v (budget 8)", samples, worst)
	}
	t.Logf("slow channel: %d served, %d busy; deepest mailbox %d/%d", ok.Load(), busy.Load(), worst.Depth, worst.MaxMessages)
}

// A storm of 1 MiB requests against a 4 MiB byte budget: the owner never
// holds more bytes than its budget, every call ends with a reply or
// ErrBusy, and the node serves normally afterwards. The handler holds its
// first request until a caller has been refused, so the budget fills
// however fast this machine moves 1 MiB frames; then each takes 5 ms.
func TestFault_LargePayloadStormStaysWithinByteBudget(t *testing.T) {
	refused := make(chan struct{})
	var refusedOnce sync.Once
	var busy, ok atomic.Int64
	hs, cli := overloadPair(t, 1000, 4<<20, func() <-chan time.Time {
		if busy.Load() == 0 {
			c := make(chan time.Time, 1)
			go func() {
				select {
				case <-refused:
				case <-time.After(10 * time.Second): // never refused: the check below fails
				}
				c <- time.Now()
			}()
			return c
		}
		return time.After(5 * time.Millisecond)
	})
	stop := make(chan struct{})
	watch := budgetWatch(t, hs, stop)
	payload := make([]byte, 1<<20)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var bad error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 12 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := cli.Call(ctx, "slow", "work", payload)
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, zlink.ErrBusy):
					busy.Add(1)
					refusedOnce.Do(func() { close(refused) })
				default:
					errMu.Lock()
					bad = err
					errMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	samples, worst := watch()
	if bad != nil {
		t.Fatalf("a call ended with %v", bad)
	}
	if ok.Load()+busy.Load() != 96 || busy.Load() == 0 {
		t.Fatalf("%d served, %d busy of 96", ok.Load(), busy.Load())
	}
	if samples == 0 || worst.MaxBytes != 4<<20 || worst.Bytes > worst.MaxBytes {
		t.Fatalf("slow owner's mailbox bytes: %d samples, worst %+v (budget 4 MiB)", samples, worst)
	}
	if _, err := cli.Call(ctxT(t, 5*time.Second), "fast", "echo", nil); err != nil {
		t.Fatalf("after the storm: %v", err)
	}
	t.Logf("1 MiB storm: %d served, %d busy; most bytes held %d/%d", ok.Load(), busy.Load(), worst.Bytes, worst.MaxBytes)
}
