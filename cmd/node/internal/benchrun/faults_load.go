package benchrun

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/spot"
	"github.com/zlink-go/zlink/test/fault"
)

// faultLiveness notices a lost peer within about half a second, like the
// fault tests.
var faultLiveness = routemesh.LivenessConfig{Interval: 50 * time.Millisecond, MaxGap: 5, LastHeard: 400 * time.Millisecond}

// faultDiscovery: short descriptor leases and polls.
var faultDiscovery = routemesh.DiscoveryConfig{DescriptorTTL: 500 * time.Millisecond, Poll: 100 * time.Millisecond, InboundGrace: time.Second}

const faultMesh = "faults"

func faultEcho(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil }

// startFaultLoad calls channel "echo" from one node in a loop on several
// workers and accounts for every call; it also counts the replies of each
// Server since the last mark.
func startFaultLoad(n *routemesh.Node, workers int, payload []byte, timeout time.Duration) *fault.Ledger {
	return startFaultCalls(workers, timeout, func(ctx context.Context) (string, error) {
		_, rid, err := n.CallFrom(ctx, "echo", "echo", payload)
		return rid, err
	})
}

// faultErrs are the typed errors a scenario's call may end with.
var faultErrs = append(slices.Clone(soakErrs), spot.ErrFenced, zlink.ErrShuttingDown)

// startFaultCalls runs call in a loop on workers goroutines, each call
// with its own deadline, and accounts for each; call returns the RID that
// answered.
func startFaultCalls(workers int, timeout time.Duration, call func(context.Context) (string, error)) *fault.Ledger {
	return fault.NewLedger(faultErrs...).Run(workers, timeout, call)
}

// waitUntil polls cond until it holds, or fails after d.
func waitUntil(ctx context.Context, what string, d time.Duration, cond func() bool) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("timed out after %v waiting for %s", d, what)
		case <-tick.C:
		}
	}
	return nil
}

// peerReady says whether n shows rid Ready.
func peerReady(n *routemesh.Node, rid string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := n.Status(ctx)
	if err != nil {
		return false
	}
	p, ok := st.Peer(rid)
	return ok && p.State == routemesh.PeerReady
}

// faultRig starts hosts and stops them, last started first.
type faultRig struct {
	ctx   context.Context
	stops []func()
}

func (r *faultRig) host(o *zlink.Options) (*zlink.Host, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	r.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(ctx)
	})
	return h, nil
}

func (r *faultRig) onClose(f func()) { r.stops = append(r.stops, f) }

// tempDir makes a directory removed when the rig closes (after whatever
// is registered later, which stops first).
func (r *faultRig) tempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	r.onClose(func() { _ = os.RemoveAll(dir) })
	return dir, nil
}

func (r *faultRig) close() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	r.stops = nil
}

// goroutineMargin is how many goroutines above its baseline a scenario
// may leave after recovery.
const goroutineMargin = 16

// goroutinesBack waits until the process runs no more than base+margin
// goroutines and returns how many it runs.
func goroutinesBack(ctx context.Context, base int) (int, error) {
	var n int
	err := waitUntil(ctx, fmt.Sprintf("goroutines back to about %d", base), 15*time.Second, func() bool {
		n = runtime.NumGoroutine()
		return n <= base+goroutineMargin
	})
	return n, err
}
