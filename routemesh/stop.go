package routemesh

import (
	"context"
	"time"

	"github.com/zlink-go/zlink/internal/zerr"
)

// Stop shuts the node down: new operations fail with ErrShuttingDown at
// once, in-flight calls get until ShutdownTimeout (or ctx) to finish, the
// rest end with ErrShuttingDown, peers get a goodbye, sockets close and
// every goroutine ends. It also releases a Failed node. Idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	deadline := time.Now().Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The mesh actor makes the transition; a Failed node has no mesh actor
	// left, and its state stays Failed until the end.
	if _, err := n.mesh().RequestControl(wctx, &beginStop{}); err != nil {
		n.setState(NodeStopping)
	}
	_ = n.calls.wait(wctx)
	// Extensions (Spots) end their work and give up their store records
	// while the descriptor still stands.
	n.stopExtensions(wctx)
	// Discovery and the lease stop first: no topology change and no
	// descriptor write after this point; then the descriptor goes.
	n.dcancel()
	if n.lease != nil {
		n.lease.end()
		n.lease.remove()
	}
	n.callsClosed.Store(true)
	n.calls.failAll(n.stopError())
	n.hcancel()
	// Handlers that honour their context return now; one that does not
	// cannot be stopped — wait for it only until the deadline, and say so.
	hctx, hcancel := context.WithDeadline(context.Background(), time.Now().Add(max(time.Until(deadline), 100*time.Millisecond)))
	err := n.work.wait(hctx)
	hcancel()
	if err != nil {
		n.log.Warn().Int64("work", n.work.load()).Msg("handlers still running at shutdown; they ignore their context")
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	_, _ = n.mesh().RequestControl(sctx, &stopMsg{reason: zerr.ErrShuttingDown})
	err = n.mesh().Stop(sctx)
	// Writers flush what they hold (goodbyes) before the listener closes.
	n.writers.Wait()
	n.goMu.Lock()
	n.goDone = true
	n.goMu.Unlock()
	n.cancel()
	_ = n.ln.Close()
	n.wg.Wait()
	n.setState(NodeStopped)
	n.log.Info().Msg("meshnode stopped")
	return err
}

// stopError is what Stop ends the remaining calls with.
func (n *Node) stopError() error {
	if n.failErr.Load() != nil {
		return n.failure()
	}
	return zerr.ErrShuttingDown
}
