package routemesh

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
	"github.com/zlink-go/zlink/routemesh/internal/handshake"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// The mesh actor drives one handshake.Machine per pipe and does only the
// I/O: it turns frames into events, builds and sends the frames the machine
// asks for (identity, nonces, proofs), and makes the pipe ready or closes it.

// newHandshake creates p's handshake machine.
func (m *meshActor) newHandshake(p *pipe, now time.Time) {
	ap := admission.Pipe{ID: p.id, Outbound: p.outbound}
	if p.outbound && p.intent != nil {
		ap.Intent = &p.intent.adm
	}
	p.hs = handshake.New(handshake.Config{Timeout: m.n.cfg.Socket.ReceiveTimeout}, m.adm, ap, now)
}

// startHandshake sends the dialer's Hello on a connected outbound pipe.
func (m *meshActor) startHandshake(p *pipe) {
	now := time.Now()
	m.newHandshake(p, now)
	m.execute(p, p.hs.Step(now, handshake.Event{Kind: handshake.Dialed}))
}

func (m *meshActor) onHello(msg *inboundHello) {
	n := m.n
	if m.stopped || m.adm == nil || m.pipes[msg.id] != nil {
		return
	}
	now := time.Now()
	p := &pipe{id: msg.id, node: n, closed: make(chan struct{}), started: now}
	p.state.Store(uint32(pipeHandshake))
	idb := []byte(msg.id)
	ln := n.ln
	p.w = newWriter(n.cfg.Socket.SendHWM, func(b []byte) error {
		return ln.Send(idb, b)
	}, func(err error) {
		_ = n.mesh().TellControl(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", zerr.ErrPeerLost, err)})
	})
	// The pipe's end (refused, lost, closed) closes its connection too,
	// after the last frame (a Reject, a goodbye) went out: a refused
	// stranger keeps no connection. Not while the identity still routes
	// to this pipe (a failed write ends the writer before the mesh actor
	// drops the pipe): the listener would let the identity go, and a new
	// connection that took it at once would have its Hello read as this
	// pipe's; dropPipe disconnects then (inboundGone).
	if tr, ok := ln.(transport.TryRouter); ok {
		p.w.try = func(b []byte) (bool, error) { return tr.TrySend(idb, b) }
	}
	p.routed = true
	p.w.closer = func() {
		p.dmu.Lock()
		if p.routed {
			p.wantDisconnect = true
			p.dmu.Unlock()
			return
		}
		p.dmu.Unlock()
		ln.Disconnect(msg.id)
	}
	m.pipes[p.id] = p
	n.inbnd.Store(p.id, p)
	n.goWriter(p.w)
	h := msg.hello
	p.hello, p.remote, p.theirNonce = h, h.Identity, h.Nonce
	m.newHandshake(p, now)
	ev := handshake.Event{Kind: handshake.HelloReceived, Remote: toAdmission(&h.Identity), ExpectRID: h.ExpectRID}
	if err := h.Identity.Validate(); err != nil {
		ev = handshake.Event{Kind: handshake.Malformed, Detail: err.Error()}
	}
	m.execute(p, p.hs.Step(now, ev))
}

func (m *meshActor) onHandshakeFrame(msg *handshakeFrame) {
	p, f := msg.p, msg.f
	if m.pipes[p.id] != p || p.getState() == pipeClosed || p.hs == nil {
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
	m.execute(p, p.hs.Step(time.Now(), m.event(p, f)))
	if f.Type == wire.FrameBatch && p.getState() == pipeReady {
		m.n.dispatch(p, f.Batch)
	}
}

// event turns a handshake frame into the machine's input, verifying proofs.
func (m *meshActor) event(p *pipe, f *wire.Frame) handshake.Event {
	n := m.n
	switch f.Type {
	case wire.FrameReject:
		return handshake.Event{Kind: handshake.RejectReceived, Reason: fromWire(f.Reject.Reason), Detail: f.Reject.Detail}
	case wire.FrameBatch:
		return handshake.Event{Kind: handshake.BatchReceived}
	case wire.FrameWelcome:
		if p.hs.State() != handshake.HelloSent {
			return handshake.Event{Kind: handshake.WelcomeReceived} // out of order: refused
		}
		w := f.Welcome
		if err := w.Identity.Validate(); err != nil {
			return handshake.Event{Kind: handshake.Malformed, Detail: err.Error()}
		}
		p.welcome, p.remote, p.theirNonce = w, w.Identity, w.Nonce
		ok := n.trust.Verify(w.Proof, "listener", w.Nonce, p.myNonce, wire.Transcript(p.hello, w)...)
		return handshake.Event{Kind: handshake.WelcomeReceived, Remote: toAdmission(&w.Identity), ProofOK: ok}
	case wire.FrameAuth:
		if p.hs.State() != handshake.WelcomeSent {
			return handshake.Event{Kind: handshake.AuthReceived} // out of order: refused
		}
		ok := n.trust.Verify(f.Auth.Proof, "dialer", p.theirNonce, p.myNonce, wire.Transcript(p.hello, p.welcome)...)
		return handshake.Event{Kind: handshake.AuthReceived, ProofOK: ok}
	default:
		return handshake.Event{Kind: handshake.Malformed, Detail: "unexpected " + f.Type.String()}
	}
}

// onHandshakeTimeout steps the machine when its deadline passes.
func (m *meshActor) onHandshakeTimeout(p *pipe) {
	p.hsTimer = false
	if m.pipes[p.id] != p || p.hs == nil || p.getState() != pipeHandshake {
		return
	}
	m.execute(p, p.hs.Step(time.Now(), handshake.Event{Kind: handshake.Tick}))
}

// execute carries out what the machine asked for.
func (m *meshActor) execute(p *pipe, out handshake.Output) {
	switch {
	case out.Ready:
		if old := m.pipes[out.Replace]; out.Replace != "" && old != nil && old != p {
			// The arbiter declared p ready, so it has let the old pipe go.
			m.dropPipe(old, fmt.Errorf("%w: the peer replaced this connection", zerr.ErrPeerLost))
		}
		m.makeReady(p)
		if !p.outbound && p.getState() == pipeReady {
			// Its connection no longer counts against the listener's
			// caps on connections still in their handshake.
			m.n.ln.Authenticated(p.id)
		}
		if out.Send == handshake.FrameBatch && p.getState() == pipeReady {
			// The arbiter's ready announcement: a first batch.
			_ = p.w.control(outItem{env: m.heartbeat(0)})
		}
	case out.Close:
		m.closeHandshake(p, out)
	case out.Send != 0:
		if err := m.send(p, out.Send); err != nil {
			m.dropPipe(p, err)
			return
		}
	}
	if !out.Deadline.IsZero() && !p.hsTimer {
		p.hsTimer = true
		ref := m.self
		time.AfterFunc(time.Until(out.Deadline), func() { _ = ref.TellControl(&handshakeTimeout{p: p}) })
	}
}

// send builds and queues a handshake frame other than a Reject.
func (m *meshActor) send(p *pipe, f handshake.Frame) error {
	n := m.n
	switch f {
	case handshake.FrameHello:
		h := &wire.Hello{Identity: n.identity(), Nonce: ident.Nonce()}
		if in := p.intent; in != nil {
			h.ExpectRID, h.ConfigGeneration = in.adm.ExpectRID, in.adm.ConfigGeneration
		}
		p.hello, p.myNonce = h, h.Nonce
		return p.sendFrame(&wire.Frame{Type: wire.FrameHello, Hello: h})
	case handshake.FrameWelcome:
		w := &wire.Welcome{Identity: n.identity(), Nonce: ident.Nonce()}
		w.Proof = n.trust.Proof("listener", w.Nonce, p.theirNonce, wire.Transcript(p.hello, w)...)
		p.welcome, p.myNonce = w, w.Nonce
		return p.sendFrame(&wire.Frame{Type: wire.FrameWelcome, Welcome: w})
	case handshake.FrameAuth:
		proof := n.trust.Proof("dialer", p.myNonce, p.theirNonce, wire.Transcript(p.hello, p.welcome)...)
		return p.sendFrame(&wire.Frame{Type: wire.FrameAuth, Auth: &wire.Auth{Proof: proof}})
	case handshake.FrameBatch:
		// The follower listener's acknowledgement of the Auth.
		return p.w.control(outItem{env: m.heartbeat(0)})
	default:
		return fmt.Errorf("%w: cannot send %v", zerr.ErrProtocol, f)
	}
}

// closeHandshake ends a handshake that did not become ready: it tells the
// peer why (unless the peer refused, or the deadline passed), updates the
// dialing intent and closes the pipe.
func (m *meshActor) closeHandshake(p *pipe, out handshake.Output) {
	n := m.n
	if out.Reason == handshake.Timeout {
		m.dropPipe(p, fmt.Errorf("%w: %s", zerr.ErrPeerLost, out.Detail))
		return
	}
	reason := out.Reason.OnWire()
	n.cnt.handshakeRejects.Add(1)
	if out.Send == handshake.FrameReject {
		if out.Reason == handshake.Protocol {
			n.cnt.protocolErrors.Add(1)
		}
		_ = p.sendFrame(&wire.Frame{Type: wire.FrameReject, Reject: &wire.Reject{Reason: reason, Detail: out.Detail}})
	}
	if in := p.intent; in != nil && in.p == p {
		switch out.Reason {
		case handshake.NotRequired:
			in.state, in.rid, in.since = PeerNotRequired, p.remote.RID, time.Now()
		case handshake.Duplicate:
			in.rid = p.remote.RID
			if l := n.load().links[in.rid]; l != nil && l.p != p {
				// Satisfied by the connection the arbiter kept: no redial.
				in.p, in.state, in.attempts, in.lastErr, in.since = nil, PeerReady, 0, nil, time.Now()
			}
		}
	}
	m.logReject(p, reason, out.Detail, out.ByPeer)
	m.dropPipe(p, &rejectError{reason: reason, detail: out.Detail, local: !out.ByPeer})
}

// fromWire reads a peer's Reject reason: one a Reject frame carries, or
// RejectProtocol for anything else (a local reason, an unknown value).
func fromWire(r wire.RejectReason) handshake.Reason {
	if r.OnWire() != r {
		return handshake.Protocol
	}
	return r
}

// logReject logs a refusal a person must act on (authentication, RID
// collision, stale generation) as a warning once per endpoint and peer
// generation; other refusals at debug.
func (m *meshActor) logReject(p *pipe, reason wire.RejectReason, detail string, remote bool) {
	ev := m.n.log.Debug()
	// Refusals a person must act on (wrong secret, a RID another lifecycle
	// holds) are warnings, once per endpoint and peer generation.
	if reason == wire.RejectAuth || reason == wire.RejectRIDCollision || reason == wire.RejectStaleGeneration {
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
