package routemesh

import (
	"context"
	"errors"
	"fmt"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// Drain takes the node out of new channel selection and multicast at once
// (a drain notice to peers and the flag in heartbeats and descriptor), keeps
// serving submitted work and Node-direct calls, and returns when no
// admitted work is left (nil) or when the drain timeout (or ctx) passes
// (ErrDrainTimeout). Drain adds no error of its own to any call. A node
// that is stopping or stopped answers ErrShuttingDown; a Failed node
// ErrNodeFailed.
func (n *Node) Drain(ctx context.Context) error {
	if err := n.askMesh(ctx, &drainMsg{}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, n.cfg.DrainTimeout)
	defer cancel()
	if err := n.drainExtensions(wctx); err != nil {
		return fmt.Errorf("%w: %w", ErrDrainTimeout, err)
	}
	if err := n.work.wait(wctx); err != nil {
		return fmt.Errorf("%w: %d admitted messages still running: %w", ErrDrainTimeout, n.work.load(), err)
	}
	n.log.Info().Msg("meshnode drained")
	return nil
}

type drainMsg struct{}

// drain runs on the mesh actor: the state moves to Draining (a node being
// rebuilt resumes as Draining), the revision grows, peers and the
// descriptor learn it. It answers nil, or why the node cannot drain.
func (m *meshActor) drain() error {
	n := m.n
	switch v := n.load(); v.state {
	case NodeDraining:
		return nil
	case NodeReady:
	case NodeStarting:
		m.resume = NodeDraining
	default:
		if err := v.refusal(n); err != nil {
			return err
		}
		return zerr.ErrShuttingDown
	}
	v := n.update(func(v *view) {
		if v.state == NodeReady {
			v.state = NodeDraining
		}
		v.revision++
	})
	up := wire.Envelope{Kind: wire.KindDrain, Draining: true, Generation: n.gen}
	for _, l := range v.links {
		_ = l.p.w.control(outItem{env: up})
	}
	if n.onRevision != nil {
		n.onRevision()
	}
	return nil
}

// Undrain undoes Drain: the node returns to new channel selection and
// multicast without a restart (peers get a drain notice with the flag
// cleared, heartbeats and the descriptor carry the new revision). A node
// that is not draining answers nil. A node that is stopping or stopped
// answers ErrShuttingDown; a Failed node ErrNodeFailed.
func (n *Node) Undrain(ctx context.Context) error {
	if err := n.askMesh(ctx, &undrainMsg{}); err != nil {
		return err
	}
	n.log.Info().Msg("meshnode undrained")
	return nil
}

type undrainMsg struct{}

// undrain runs on the mesh actor, the only writer of the view: Draining
// goes back to Ready (or to Starting while the owners are being rebuilt,
// which then resume as Ready), the revision grows, peers and the
// descriptor learn it.
func (m *meshActor) undrain() error {
	n := m.n
	if m.resume == NodeDraining {
		m.resume = NodeReady
	}
	switch v := n.load(); v.state {
	case NodeDraining:
	case NodeReady, NodeStarting:
		return nil
	default:
		if err := v.refusal(n); err != nil {
			return err
		}
		return zerr.ErrShuttingDown
	}
	v := n.update(func(v *view) {
		if v.state == NodeDraining {
			v.state = NodeReady
			if v.owners == nil {
				v.state = NodeStarting // onChannelsUp makes it Ready
			}
		}
		v.revision++
	})
	up := wire.Envelope{Kind: wire.KindDrain, Draining: false, Generation: n.gen}
	for _, l := range v.links {
		_ = l.p.w.control(outItem{env: up})
	}
	if n.onRevision != nil {
		n.onRevision()
	}
	return nil
}

// askMesh asks the mesh actor to make a state change and returns its
// answer (nil, or why the node cannot): the node's refusal when it is
// stopping, stopped or Failed, ErrShuttingDown when the mesh actor is gone.
func (n *Node) askMesh(ctx context.Context, msg any) error {
	if err := n.load().refusal(n); err != nil {
		return err
	}
	r, err := n.mesh().RequestControl(ctx, msg)
	if err != nil {
		if errors.Is(err, actors.ErrStopped) {
			if rerr := n.load().refusal(n); rerr != nil {
				return rerr
			}
			return zerr.ErrShuttingDown
		}
		return err
	}
	if err, _ := r.(error); err != nil {
		return err
	}
	return nil
}
