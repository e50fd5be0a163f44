package routemesh

import (
	"context"
	"time"

	"github.com/zlink-go/zlink/wire"
)

// Stop shuts the node down (SPEC §8): new operations fail with
// ErrShuttingDown at once, in-flight calls get until ShutdownTimeout (or
// ctx) to finish, the rest end with ErrShuttingDown, peers get a goodbye,
// sockets close and every goroutine ends. Idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.state.Store(uint32(NodeStopping))
	deadline := time.Now().Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for n.calls.size() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			deadline = time.Now()
		case <-time.After(5 * time.Millisecond):
		}
	}
	// Discovery and the lease stop first: no topology change and no
	// descriptor write after this point; then the descriptor goes.
	n.dcancel()
	if n.lease != nil {
		<-n.lease.done
		n.lease.remove()
	}
	n.callsClosed.Store(true)
	n.calls.failAll(wire.ErrShuttingDown)
	n.hcancel()
	// Handlers that honour their context return now; one that does not
	// cannot be stopped — wait for it only until the deadline, and say so.
	hdeadline := time.Now().Add(max(time.Until(deadline), 100*time.Millisecond))
	for n.running.Load() > 0 && time.Now().Before(hdeadline) {
		time.Sleep(time.Millisecond)
	}
	if r := n.running.Load(); r > 0 {
		n.log.Warn().Int64("running", r).Msg("handlers still running at shutdown; they ignore their context")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = n.ref.Request(sctx, &stopMsg{})
	err := n.ref.Stop(sctx)
	n.goMu.Lock()
	n.goDone = true
	n.goMu.Unlock()
	n.cancel()
	_ = n.router.Close()
	n.wg.Wait()
	n.state.Store(uint32(NodeStopped))
	n.log.Info().Msg("meshnode stopped")
	return err
}
