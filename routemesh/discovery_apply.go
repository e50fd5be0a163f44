package routemesh

// The mesh actor's side of discovery: it applies the changes the
// discovery actor hands it, one at a time, and acknowledges each.

import (
	"time"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// autoPeer is an automatic peer this node does not dial: it waits for the
// smaller RID to dial (wantAwait), or the pair needs no connection
// (wantExcluded).
type autoPeer struct {
	kind     wantKind
	endpoint string
	since    time.Time // installed, or its last connection lost
}

// applyChange carries out one discovery change.
func (m *meshActor) applyChange(c change) {
	if m.stopped {
		return
	}
	rid := c.d.RID
	m.removeAuto(rid)
	d := c.d
	switch c.kind {
	case wantDial:
		in := &intent{
			cfg: PeerConfig{Endpoint: d.Endpoint, ExpectRID: rid},
			adm: admission.Intent{Endpoint: d.Endpoint, ExpectRID: rid, ExpectGeneration: d.Generation,
				ExpectSecurity: d.SecurityIdentity, ConfigGeneration: m.n.cfg.ConfigGeneration},
			state: PeerConnecting, since: time.Now(), rid: rid, auto: true, desc: true,
		}
		m.intents = append(m.intents, in)
		m.dial(in)
	case wantAwait, wantExcluded:
		m.auto[rid] = &autoPeer{kind: c.kind, endpoint: d.Endpoint, since: time.Now()}
	}
	m.n.log.Debug().Str("peer", rid).Stringer("change", c.kind).Uint64("peer_generation", d.Generation).Msg("discovery change")
}

// removeAuto withdraws what discovery installed for rid. A handshake in
// progress for the withdrawn intent is closed; a ready connection stays
// (liveness, not the descriptor's TTL, decides that the peer is gone).
func (m *meshActor) removeAuto(rid string) {
	delete(m.auto, rid)
	kept := m.intents[:0]
	var drop []*pipe
	for _, in := range m.intents {
		if !in.auto || in.rid != rid {
			kept = append(kept, in)
			continue
		}
		in.removed = true
		if in.p != nil && in.p.getState() != pipeReady {
			drop = append(drop, in.p)
		}
	}
	for i := len(kept); i < len(m.intents); i++ {
		m.intents[i] = nil
	}
	m.intents = kept
	for _, p := range drop {
		m.dropPipe(p, errIntentRemoved)
	}
}

// applyDescWeights applies a descriptor's larger revision to a ready link
// of the same generation: a weight push that was lost converges here.
func (m *meshActor) applyDescWeights(descs []location.Descriptor) {
	links := m.n.load().links
	for i := range descs {
		d := &descs[i]
		if l := links[d.RID]; l != nil && l.gen == d.Generation && l.p != nil {
			m.applyMember(l.p, d.Generation, d.Revision, d.Servers)
		}
	}
}

// matchManual records the descriptor matching a manual endpoint and
// upgrades its intent when that is allowed.
func (m *meshActor) matchManual(msg *manualMatch) {
	for _, in := range m.intents {
		if in.auto || in.cfg.Endpoint != msg.endpoint {
			continue
		}
		in.pending, in.pendingSet = msg.d, true
		m.tryUpgrade(in)
	}
}

// tryUpgrade replaces a manual intent's expected values with its matched
// descriptor (RID, positive generation, security identity), or back to
// endpoint-only when the descriptor is gone. Never while the intent has a
// pipe (handshake or ready) or is satisfied by a ready link: a healthy
// connection is not torn down for this, and the old intent must have been
// closed by liveness first. A NotRequired intent stays as it is.
func (m *meshActor) tryUpgrade(in *intent) {
	if !in.pendingSet || in.auto || in.state == PeerNotRequired || in.p != nil {
		return
	}
	if in.rid != "" && m.n.load().links[in.rid] != nil {
		return
	}
	d := in.pending
	in.pending, in.pendingSet = nil, false
	adm := admission.Intent{Endpoint: in.cfg.Endpoint, ExpectRID: in.cfg.ExpectRID, ConfigGeneration: in.adm.ConfigGeneration}
	if d != nil {
		adm.ExpectRID, adm.ExpectGeneration, adm.ExpectSecurity = d.RID, d.Generation, d.SecurityIdentity
	}
	if adm == in.adm {
		return
	}
	in.adm, in.desc = adm, d != nil
	if d != nil {
		in.rid = d.RID
	}
	m.n.log.Info().Str("endpoint", in.cfg.Endpoint).Str("peer", adm.ExpectRID).Bool("descriptor", in.desc).Msg("manual intent replaced")
}

// descBacked reports whether discovery backs peer rid with a descriptor.
func (m *meshActor) descBacked(rid string) bool {
	if _, ok := m.auto[rid]; ok {
		return true
	}
	for _, in := range m.intents {
		if in.desc && in.rid == rid {
			return true
		}
	}
	return false
}
