package routemesh

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/transport/memnet"
	"github.com/zlink-go/zlink/wire"
)

// pairMem starts listener "b" and dialer "a" (which expects "b") with the
// same liveness settings and waits until they are ready to each other.
func pairMem(t *testing.T, nw *memnet.Network, live LivenessConfig) (a, b *memNode) {
	t.Helper()
	b = startMem(t, nw, memSpec{rid: "b", live: live})
	a = startMem(t, nw, memSpec{rid: "a", live: live, peer: b.Endpoint(), expect: "b"})
	waitUntil(t, "a and b ready to each other", 5*time.Second, func() bool { return settled(nw, a, b) })
	if !a.callOK(t, "b") || !b.callOK(t, "a") {
		t.Fatal("calls fail on a healthy connection")
	}
	return a, b
}

// callLost makes a call from a to b that the network will not let finish
// and returns how long it took and its error. Its deadline is far away, so
// only the loss of the connection can end it early.
func callLost(a *memNode) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := a.CallNode(ctx, "b", "echo", []byte("lost"))
	return time.Since(start), err
}

// Symmetric loss: nothing crosses in either direction. The last-heard
// threshold is an hour, so only the gap counter (heartbeats sent and not
// answered) can declare the peer lost; a pending call ends ErrPeerLost
// long before its deadline.
func TestLivenessMem_GapCounterAloneDetectsSymmetricLoss(t *testing.T) {
	nw := memnet.New(1)
	live := LivenessConfig{Interval: 20 * time.Millisecond, MaxGap: 4, LastHeard: time.Hour}
	a, b := pairMem(t, nw, live)

	nw.Partition("a", "b")
	took, err := callLost(a)
	if !errors.Is(err, wire.ErrPeerLost) || !strings.Contains(err.Error(), "gap exceeded") {
		t.Fatalf("call across the partition = %v, want ErrPeerLost by the gap counter", err)
	}
	if took > 10*time.Second {
		t.Fatalf("the loss took %v to notice", took)
	}
	// The listener side counts its own gap too.
	waitUntil(t, "b loses a", 5*time.Second, func() bool { return b.linkTo("a") == nil })
	if b.cnt.peersLost.Load() == 0 {
		t.Fatal("b never counted the peer lost")
	}
	if nw.Counts().Dropped == 0 {
		t.Fatal("the partition dropped nothing")
	}
}

// Asymmetric loss: b's frames no longer reach a, a's still reach b. The gap
// threshold is out of reach, so only last-heard can declare b lost on a.
func TestLivenessMem_LastHeardAloneDetectsOneWayLoss(t *testing.T) {
	nw := memnet.New(2)
	live := LivenessConfig{Interval: 20 * time.Millisecond, MaxGap: 1 << 20, LastHeard: 300 * time.Millisecond}
	a, b := pairMem(t, nw, live)

	nw.Cut("b", "a")
	took, err := callLost(a) // the request reaches b; its reply is dropped
	if !errors.Is(err, wire.ErrPeerLost) || !strings.Contains(err.Error(), "silent") {
		t.Fatalf("call with its reply cut = %v, want ErrPeerLost by last-heard", err)
	}
	if took < live.LastHeard/2 {
		t.Fatalf("lost after %v: sooner than the silence it should have waited for (%v)", took, live.LastHeard)
	}
	// a closing its connection is what b hears of it (b still heard a's
	// heartbeats, so its own liveness had no reason to fire).
	waitUntil(t, "b drops the pipe a closed", 5*time.Second, func() bool { return b.linkTo("a") == nil })
}

// A partition ends every call pending on the connection with ErrPeerLost
// the moment the connection is declared lost (together, not one by one at
// their deadlines), new calls get ErrNoTarget while it lasts, and after
// the heal the dialer reconnects on its own and calls succeed again.
func TestPartitionMem_PeerLostAtOnceThenHeal(t *testing.T) {
	nw := memnet.New(3)
	// A 300 ms gap: the 80 ms of 20 ms × 4 is a stall a loaded machine can
	// produce before the partition, and a connection lost then would end
	// the calls before they all run on b.
	live := LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 6, LastHeard: 600 * time.Millisecond}
	a, b := pairMem(t, nw, live)
	pipeBefore := a.linkTo("b").p.id

	// Calls in flight: their handlers run on b until the caller's deadline.
	const calls = 8
	var wg sync.WaitGroup
	errs := make([]error, calls)
	ends := make([]time.Time, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, errs[i] = a.CallNode(ctx, "b", "hold", nil)
			ends[i] = time.Now()
		}()
	}
	waitUntil(t, "every call running on b", 5*time.Second, func() bool {
		return a.calls.pending.load() == calls && b.work.load() == calls
	})
	nw.Partition("a", "b")
	wg.Wait()
	first, last := ends[0], ends[0]
	for i, err := range errs {
		if !errors.Is(err, wire.ErrPeerLost) {
			t.Fatalf("call %d across the partition = %v, want ErrPeerLost", i, err)
		}
		if ends[i].Before(first) {
			first = ends[i]
		}
		if ends[i].After(last) {
			last = ends[i]
		}
	}
	// Their deadlines are 30 s away, so ending within a couple of seconds
	// of each other can only be the loss of the connection; the slack is
	// for waking eight goroutines on a loaded machine under -race.
	if spread := last.Sub(first); spread > 2*time.Second {
		t.Fatalf("pending calls ended %v apart: they must all end when the connection is lost", spread)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := a.CallNode(ctx, "b", "echo", nil)
	cancel()
	if !errors.Is(err, wire.ErrNoTarget) {
		t.Fatalf("call during the partition = %v, want ErrNoTarget", err)
	}
	waitUntil(t, "b loses a", 5*time.Second, func() bool { return b.linkTo("a") == nil })

	nw.Heal("a", "b")
	waitUntil(t, "reconnected after the heal", 10*time.Second, func() bool { return settled(nw, a, b) })
	if !a.callOK(t, "b") || !b.callOK(t, "a") {
		t.Fatal("calls fail after the heal")
	}
	if a.linkTo("b").p.id == pipeBefore {
		t.Fatal("the lost pipe was kept instead of a new connection")
	}
}
