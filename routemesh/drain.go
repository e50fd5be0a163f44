package routemesh

import (
	"context"
	"fmt"
	"time"

	"github.com/zlink-go/zlink/wire"
)

// Drain takes the node out of new channel selection and multicast at once
// (a drain notice to peers and the flag in heartbeats and descriptor), keeps
// serving submitted work and Node-direct calls, and returns when no
// admitted work is left (nil) or when the drain timeout (or ctx) passes
// (ErrDrainTimeout). Drain adds no error of its own to any call.
func (n *Node) Drain(ctx context.Context) error {
	if !n.state.CompareAndSwap(uint32(NodeReady), uint32(NodeDraining)) && n.State() != NodeDraining {
		return wire.ErrShuttingDown
	}
	if _, err := n.ref.Request(ctx, &drainMsg{}); err != nil {
		return err
	}
	deadline := time.Now().Add(n.cfg.DrainTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for n.inflight.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d admitted messages still running", ErrDrainTimeout, n.inflight.Load())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrDrainTimeout, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	n.drained.Store(true)
	n.log.Info().Msg("meshnode drained")
	return nil
}

type drainMsg struct{}

func (m *meshActor) announceDrain() {
	n := m.n
	n.revision.Add(1)
	up := wire.Envelope{Kind: wire.KindDrain, Draining: true, Generation: n.gen}
	for _, l := range *n.links.Load() {
		_ = l.p.w.control(outItem{env: up})
	}
	if n.onRevision != nil {
		n.onRevision()
	}
}
