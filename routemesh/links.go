package routemesh

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
)

// makeReady turns an admitted pipe into a ready link.
func (m *meshActor) makeReady(p *pipe) {
	n := m.n
	l := &link{rid: p.remote.RID, gen: p.remote.Generation, p: p, objectRole: p.remote.ObjectRole, recvLimit: envelopeLimit(p.remote.RecvLimit),
		trace: slices.Contains(p.remote.Capabilities, capTrace)}
	l.draining.Store(p.remote.Draining)
	l.full = make(map[string]*atomic.Bool, len(p.remote.Servers))
	for ch := range p.remote.Servers {
		l.full[ch] = new(atomic.Bool)
	}
	p.link = l
	p.live = newPipeLive(n.cfg.Liveness, time.Now())
	p.w.maxBatch = int(min(uint64(p.w.maxBatch), max(l.recvLimit, 1<<10)))
	// A child of the mesh actor, spawned without waiting on anyone; it
	// starts its liveness machine in its own Started.
	ref, err := m.c.Spawn(actors.Spec{
		Name: "peer:" + l.rid + "#" + strconv.FormatUint(n.peerSeq.Add(1), 10), Kind: "peer",
		MaxMessages: peerMailboxMessages, MaxBytes: peerMailboxBytes,
		Producer: func() actors.Actor { return newPeerActor(n, m.self, p, l) },
	})
	if err != nil {
		m.dropPipe(p, err)
		return
	}
	l.peer = ref
	p.state.Store(uint32(pipeReady))
	n.update(func(v *view) { v.links = withLink(v.links, l.rid, l) })
	m.applyMember(p, p.remote.Generation, p.remote.Revision, p.remote.Servers)
	for _, in := range m.intents {
		if in.p == p || (in.rid == l.rid && in.p == nil) {
			in.rid, in.state, in.attempts, in.lastErr, in.since = l.rid, PeerReady, 0, nil, time.Now()
		}
	}
	n.log.Info().Str("peer", l.rid).Str("pipe", p.id).Bool("outbound", p.outbound).Msg("peer ready")
}

// dropPipe closes p and undoes whatever it held: its ready link, its
// pending calls (ErrPeerLost at once), its admission slot; an intent whose
// pipe it was dials again with backoff.
func (m *meshActor) dropPipe(p *pipe, reason error) {
	if v, ok := errors.AsType[*peerVerdict](reason); ok {
		reason = v.err
	} else if m.pipes[p.id] == p && !m.stopped && p.getState() == pipeReady && p.link != nil && p.link.peer != nil {
		// A ready pipe's socket closed or failed: let its peer actor apply
		// what the reader queued before (a goodbye) and report the verdict.
		if p.link.peer.TellControl(&peerClosed{reason: reason}) == nil {
			return
		}
	}
	if m.pipes[p.id] != p {
		// Not registered yet (a dial in flight): mark it closed so the dial
		// result is discarded, and free the intent.
		p.close()
		if in := p.intent; in != nil && in.p == p {
			in.p = nil
		}
		return
	}
	n := m.n
	delete(m.pipes, p.id)
	if !p.outbound {
		n.inbnd.Delete(p.id)
		p.inboundGone(n)
	}
	wasReady := p.getState() == pipeReady
	p.close()
	if m.adm != nil {
		m.adm.PipeClosed(p.id)
	}
	if wasReady && p.link != nil {
		m.linkLost(p, reason)
	}
	if in := p.intent; in != nil && in.p == p {
		in.p = nil
		if in.state != PeerNotRequired {
			m.tryUpgrade(in)
			m.retry(in, reason)
		}
	}
}

// linkLost is dropPipe's part for a ready pipe: the peer went away (or
// said goodbye); its link leaves the view, its calls end, the intents it
// satisfied dial again.
func (m *meshActor) linkLost(p *pipe, reason error) {
	n := m.n
	l := p.link
	if errors.Is(reason, errGoodbye) {
		n.cnt.peersDeparted.Add(1)
	} else {
		n.cnt.peersLost.Add(1)
	}
	m.wentAway(l.rid, errors.Is(reason, errGoodbye), reason, time.Now())
	if m.adm != nil {
		// The lifecycle is gone only when no other pipe (a duplicate
		// that replaced this one) is current for it.
		if _, _, ok := m.adm.Current(l.rid); !ok {
			m.adm.PeerLost(l.rid, l.gen)
		}
	}
	if cur := n.load().links[l.rid]; cur == l {
		n.update(func(v *view) { v.links = withLink(v.links, l.rid, nil) })
		n.table.Remove(l.rid, l.gen)
	}
	if l.peer != nil {
		stopAsync(l.peer)
	}
	lost := fmt.Errorf("%w: %s: %v", zerr.ErrPeerLost, l.rid, reason)
	if errors.Is(reason, zerr.ErrPeerLost) {
		lost = reason
	}
	n.calls.failPipe(p.id, lost)
	n.log.Info().Str("peer", l.rid).Str("pipe", p.id).Str("reason", errString(reason)).Msg("peer lost")
	if ap := m.auto[l.rid]; ap != nil {
		ap.since = time.Now()
	}
	// Intents that were satisfied by this link dial again.
	for _, in := range m.intents {
		if in.rid == l.rid && in.p == nil && in.state == PeerReady {
			in.state = PeerNotConnected
			in.since = time.Now()
			m.tryUpgrade(in)
			m.retry(in, reason)
		}
	}
}
