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
	_, err := n.mesh().RequestControl(ctx, &setWeight{channel: channel, weight: uint16(weight)})
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
	// Weights and revision change together in one view, so a heartbeat
	// or handshake never pairs a new revision with old weights.
	v := n.update(func(v *view) {
		next := make(map[string]uint16, len(v.weights))
		for k, w := range v.weights {
			next[k] = w
		}
		next[msg.channel] = msg.weight
		v.weights = next
		v.revision++
	})
	next, rev := v.weights, v.revision
	n.table.Apply(selection.Member{RID: n.rid, Generation: n.gen, Revision: rev, Servers: next, Local: true})
	n.viewChanged()
	up := wire.Envelope{Kind: wire.KindWeightUpdate, Generation: n.gen, Revision: rev, Servers: next}
	for _, l := range v.links {
		_ = l.p.w.control(outItem{env: up})
	}
	n.log.Info().Str("channel", msg.channel).Uint16("weight", msg.weight).Uint64("revision", rev).Msg("weight changed")
	if n.onRevision != nil {
		n.onRevision()
	}
}

// applyMember applies a peer's Server set of generation gen and revision
// rev, reported over pipe p: only while p is the peer's current ready
// pipe (a report from a dropped pipe or an old generation changes
// nothing), and only a larger revision within the same generation changes
// the table. It runs on the mesh actor, the table's only writer.
func (m *meshActor) applyMember(p *pipe, gen, rev uint64, servers map[string]uint16) {
	n := m.n
	if m.pipes[p.id] != p || p.getState() != pipeReady || p.link == nil {
		return
	}
	l := p.link
	if cur := n.load().links[l.rid]; cur != l || gen != l.gen || rev == 0 {
		return
	}
	if servers == nil {
		servers = map[string]uint16{}
	}
	mem := selection.Member{RID: l.rid, Generation: gen, Revision: rev, Servers: servers}
	if mem.Validate() != nil {
		n.cnt.protocolErrors.Add(1)
		return
	}
	n.table.Apply(mem)
	n.viewChanged()
}
