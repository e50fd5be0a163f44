package routemesh

import (
	"fmt"
	"strconv"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
	"github.com/zlink-go/zlink/wire"
)

func (m *meshActor) onHello(msg *inboundHello) {
	n := m.n
	if m.stopped || m.pipes[msg.id] != nil {
		return
	}
	p := &pipe{id: msg.id, node: n, closed: make(chan struct{}), started: time.Now()}
	p.state.Store(uint32(pipeHandshake))
	idb := []byte(msg.id)
	p.w = newWriter(n.cfg.Socket.SendHWM, func(b []byte) error {
		return n.router.Send(zmq4.NewMsgFrom(idb, b))
	}, func(err error) {
		_ = n.mesh().Tell(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", wire.ErrPeerLost, err)})
	})
	m.pipes[p.id] = p
	n.inbnd.Store(p.id, p)
	n.goWriter(p.w)
	h := msg.hello
	p.hello, p.remote, p.theirNonce = h, h.Identity, h.Nonce
	switch {
	case h.Mesh != n.cfg.Mesh:
		m.reject(p, wire.RejectWrongMesh, "mesh "+h.Mesh)
		return
	case h.Protocol != wire.ProtocolVersion:
		m.reject(p, wire.RejectVersion, "protocol "+strconv.Itoa(int(h.Protocol)))
		return
	case h.ExpectRID != "" && h.ExpectRID != n.rid:
		m.reject(p, wire.RejectWrongRID, "this node is "+n.rid)
		return
	case h.Identity.Validate() != nil:
		m.reject(p, wire.RejectProtocol, h.Identity.Validate().Error())
		return
	}
	w := &wire.Welcome{Identity: n.identity(), Nonce: ident.Nonce()}
	w.Proof = n.trust.Proof("listener", w.Nonce, h.Nonce, wire.Transcript(h, w)...)
	p.welcome, p.myNonce = w, w.Nonce
	if err := p.sendFrame(&wire.Frame{Type: wire.FrameWelcome, Welcome: w}); err != nil {
		m.dropPipe(p, err)
		return
	}
	m.armHandshakeTimeout(p)
}

func (m *meshActor) onHandshakeFrame(msg *handshakeFrame) {
	p, f := msg.p, msg.f
	if m.pipes[p.id] != p || p.getState() == pipeClosed {
		m.n.cnt.lateFrames.Add(1)
		return
	}
	if p.getState() == pipeReady {
		// A frame that was queued before the pipe became ready.
		if f.Type == wire.FrameBatch {
			m.n.dispatch(p, f.Batch)
		}
		return
	}
	switch f.Type {
	case wire.FrameReject:
		m.onReject(p, f.Reject)
	case wire.FrameWelcome:
		if p.outbound && p.welcome == nil {
			m.onWelcome(p, f.Welcome)
			return
		}
		m.protocolViolation(p, "unexpected welcome")
	case wire.FrameAuth:
		if !p.outbound && p.welcome != nil {
			m.onAuth(p, f.Auth)
			return
		}
		m.protocolViolation(p, "unexpected auth")
	case wire.FrameBatch:
		// The listener's first batch acknowledges our Auth: ready.
		if p.outbound && p.welcome != nil && m.adm.IsCurrent(p.id) {
			m.makeReady(p)
			m.n.dispatch(p, f.Batch)
			return
		}
		m.protocolViolation(p, "batch before handshake")
	default:
		m.protocolViolation(p, "unexpected "+f.Type.String())
	}
}

func (m *meshActor) protocolViolation(p *pipe, detail string) {
	m.n.cnt.protocolErrors.Add(1)
	m.reject(p, wire.RejectProtocol, detail)
}

// onWelcome runs on the dialer: verify the listener, admit, answer Auth.
func (m *meshActor) onWelcome(p *pipe, w *wire.Welcome) {
	n := m.n
	p.welcome, p.remote, p.theirNonce = w, w.Identity, w.Nonce
	if err := w.Identity.Validate(); err != nil {
		m.reject(p, wire.RejectProtocol, err.Error())
		return
	}
	tr := wire.Transcript(p.hello, w)
	authOK := n.trust.Verify(w.Proof, "listener", w.Nonce, p.myNonce, tr...)
	in := p.intent
	d := m.adm.Admit(admission.Pipe{ID: p.id, Outbound: true, Intent: &in.adm}, toAdmission(&w.Identity), authOK)
	if !m.apply(p, d) {
		return
	}
	proof := n.trust.Proof("dialer", p.myNonce, w.Nonce, tr...)
	if err := p.sendFrame(&wire.Frame{Type: wire.FrameAuth, Auth: &wire.Auth{Proof: proof}}); err != nil {
		m.dropPipe(p, err)
	}
	// Ready when the listener's first batch arrives.
}

// onAuth runs on the listener: verify the dialer, admit, acknowledge.
func (m *meshActor) onAuth(p *pipe, a *wire.Auth) {
	n := m.n
	authOK := n.trust.Verify(a.Proof, "dialer", p.theirNonce, p.myNonce, wire.Transcript(p.hello, p.welcome)...)
	d := m.adm.Admit(admission.Pipe{ID: p.id}, toAdmission(&p.remote), authOK)
	if !m.apply(p, d) {
		return
	}
	m.makeReady(p)
	// The acknowledgement: a first batch carrying a heartbeat.
	_ = p.w.control(outItem{env: m.heartbeat(0)})
}

// apply carries out an admission decision; it reports whether p goes on.
func (m *meshActor) apply(p *pipe, d admission.Decision) bool {
	switch d.Verdict {
	case admission.Accept:
		return true
	case admission.Replace:
		if old := m.pipes[d.Close]; old != nil && old != p {
			if !old.outbound {
				_ = old.sendFrame(&wire.Frame{Type: wire.FrameReject, Reject: &wire.Reject{Reason: wire.RejectDuplicate, Detail: "replaced by " + p.id}})
			}
			m.dropPipe(old, fmt.Errorf("%w: duplicate pipe replaced", wire.ErrPeerLost))
		}
		return true
	case admission.NotRequired:
		if p.intent != nil {
			p.intent.state = PeerNotRequired
			p.intent.rid = p.remote.RID
			p.intent.since = time.Now()
		}
		m.reject(p, wire.RejectNotRequired, "both Object Clients without Channel Server membership")
	case admission.Duplicate:
		m.reject(p, wire.RejectDuplicate, "a connection to this peer already exists")
	case admission.Defer:
		m.reject(p, wire.RejectStaleGeneration, "the previous generation's connection is still alive")
	default:
		m.reject(p, rejectReason(d.Reason), d.Reason.String())
	}
	return false
}

func rejectReason(r admission.Reason) wire.RejectReason {
	switch r {
	case admission.WrongMesh:
		return wire.RejectWrongMesh
	case admission.WrongRID:
		return wire.RejectWrongRID
	case admission.AuthFailed:
		return wire.RejectAuth
	case admission.Version:
		return wire.RejectVersion
	case admission.Capability:
		return wire.RejectCapability
	case admission.RIDCollision:
		return wire.RejectRIDCollision
	case admission.StaleGeneration, admission.OldGenerationAlive:
		return wire.RejectStaleGeneration
	case admission.NotRequiredPair:
		return wire.RejectNotRequired
	case admission.DuplicatePipe:
		return wire.RejectDuplicate
	default:
		return wire.RejectProtocol
	}
}

// reject tells the peer why and closes p.
func (m *meshActor) reject(p *pipe, reason wire.RejectReason, detail string) {
	m.n.cnt.handshakeRejects.Add(1)
	_ = p.sendFrame(&wire.Frame{Type: wire.FrameReject, Reject: &wire.Reject{Reason: reason, Detail: detail}})
	m.logReject(p, reason, detail, false)
	m.dropPipe(p, &rejectError{reason: reason, detail: detail, local: true})
}

// onReject handles the peer's refusal.
func (m *meshActor) onReject(p *pipe, r *wire.Reject) {
	m.n.cnt.handshakeRejects.Add(1)
	if in := p.intent; in != nil {
		switch r.Reason {
		case wire.RejectNotRequired:
			in.state = PeerNotRequired
			in.rid = p.remote.RID
			in.since = time.Now()
		case wire.RejectDuplicate:
			in.rid = p.remote.RID
		}
	}
	m.logReject(p, r.Reason, r.Detail, true)
	m.dropPipe(p, &rejectError{reason: r.Reason, detail: r.Detail})
}

// logReject logs an authentication failure once per endpoint + generation;
// other refusals at debug.
func (m *meshActor) logReject(p *pipe, reason wire.RejectReason, detail string, remote bool) {
	ev := m.n.log.Debug()
	if reason == wire.RejectAuth {
		endpoint := p.remote.Endpoint
		if p.intent != nil {
			endpoint = p.intent.cfg.Endpoint
		}
		key := endpoint + "#" + strconv.FormatUint(p.remote.Generation, 16)
		if _, seen := m.authLogged[key]; seen {
			return
		}
		if len(m.authLogged) >= 4096 { // bounded: a flood of forged identities cannot grow it
			clear(m.authLogged)
		}
		m.authLogged[key] = struct{}{}
		ev = m.n.log.Warn()
	}
	ev.Str("pipe", p.id).Str("peer", p.remote.RID).Stringer("reason", reason).
		Bool("by_peer", remote).Str("detail", detail).Msg("handshake refused")
}

// rejectError is why a handshake ended.
type rejectError struct {
	reason wire.RejectReason
	detail string
	local  bool
}

func (e *rejectError) Error() string {
	who := "peer"
	if e.local {
		who = "local"
	}
	return "zlink: handshake refused by " + who + ": " + e.reason.String() + ": " + e.detail
}
