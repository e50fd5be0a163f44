package routemesh

import (
	"context"

	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/wire"
)

// SetWeight changes this node's weight on a Server channel at runtime
// (0..10000; anything else is a configuration error). The descriptor
// revision increases, peers get the new set at once (and on every
// heartbeat), and only calls started afterwards see it. No reconnect.
func (n *Node) SetWeight(ctx context.Context, channel string, weight int) error {
	if err := CheckWeight(weight); err != nil {
		ce := err.(*ConfigError)
		ce.Mesh, ce.Channel = n.cfg.Mesh, channel
		return ce
	}
	co := n.channels[channel]
	if co == nil || co.role != RoleServer {
		return &ConfigError{Mesh: n.cfg.Mesh, Channel: channel, Err: ErrUnknownChannel}
	}
	_, err := n.ref.Request(ctx, &setWeight{channel: channel, weight: uint16(weight)})
	return err
}

type setWeight struct {
	channel string
	weight  uint16
}

// applyWeight runs on the mesh actor: the single writer of weights and
// revision.
func (m *meshActor) applyWeight(msg *setWeight) {
	n := m.n
	cur := n.servers()
	next := make(map[string]uint16, len(cur))
	for k, v := range cur {
		next[k] = v
	}
	next[msg.channel] = msg.weight
	// Weights first, then the revision: a heartbeat built concurrently reads
	// the revision before the weights, so it can never pair the new
	// revision with the old weights (peers would then refuse the real
	// update as not newer).
	n.weights.Store(&next)
	rev := n.revision.Add(1)
	n.table.Apply(selection.Member{RID: n.rid, Generation: n.gen, Revision: rev, Servers: next, Local: true})
	up := wire.Envelope{Kind: wire.KindWeightUpdate, Generation: n.gen, Revision: rev, Servers: next}
	for _, l := range *n.links.Load() {
		_ = l.p.w.control(outItem{env: up})
	}
	n.log.Info().Str("channel", msg.channel).Uint16("weight", msg.weight).Uint64("revision", rev).Msg("weight changed")
	if n.onRevision != nil {
		n.onRevision()
	}
}

// applyMember applies a peer's Server set of generation gen and revision
// rev: only a larger revision within the same generation changes the table.
func (n *Node) applyMember(l *link, gen, rev uint64, servers map[string]uint16) {
	if gen != l.gen || rev == 0 {
		return
	}
	if servers == nil {
		servers = map[string]uint16{}
	}
	m := selection.Member{RID: l.rid, Generation: gen, Revision: rev, Servers: servers}
	if m.Validate() != nil {
		n.cnt.protocolErrors.Add(1)
		return
	}
	n.table.Apply(m)
}
