package routemesh

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
	"github.com/zlink-go/zlink/wire"
)

// Messages of the mesh actor.
type (
	startMsg     struct{}
	stopMsg      struct{}
	statusReq    struct{}
	inboundHello struct {
		id    string
		hello *wire.Hello
	}
	handshakeFrame struct {
		p    *pipe
		f    *wire.Frame
		done chan struct{} // closed once applied (outbound pipes)
	}
	dialDone struct {
		in     *intent
		p      *pipe
		dealer zmq4.Socket // the dialed socket (nil on error); owned by the mesh actor from here on
		err    error
	}
	pipeFailed struct {
		p   *pipe
		err error
	}
	connClosed struct {
		id     string
		reason error
	}
	peerLost struct {
		p      *pipe
		reason error
	}
	redial           struct{ in *intent }
	handshakeTimeout struct{ p *pipe }
)

// intent is one manual connection intent: an endpoint we dial until a
// ready connection to it exists, or until the handshake says NotRequired.
type intent struct {
	cfg      PeerConfig
	adm      admission.Intent
	state    PeerState
	rid      string // learned from the handshake
	p        *pipe  // current attempt or ready pipe
	attempts int
	lastErr  error
	since    time.Time
	waiting  bool // a redial is scheduled
	auto     bool // installed by automatic discovery
	desc     bool // expected values come from a Location Store descriptor
	removed  bool // withdrawn by discovery: never dialled again
	// pending is the descriptor matched to a manual endpoint (nil = none),
	// installed by tryUpgrade once the intent has no connection.
	pending    *location.Descriptor
	pendingSet bool
}

// meshActor owns the MeshNode's topology: handshakes and admission, pipes,
// connection intents and the ready-link table callers read. It never blocks:
// dials run on tracked goroutines and report back.
type meshActor struct {
	n       *Node
	adm     *admission.Machine
	pipes   map[string]*pipe
	intents []*intent
	auto    map[string]*autoPeer // automatic peers this node does not dial
	stopped bool
	// authLogged remembers endpoint+generation pairs whose authentication
	// failure was logged, so each is logged once.
	authLogged map[string]struct{}
}

func newMeshActor(n *Node) *meshActor {
	return &meshActor{n: n, pipes: map[string]*pipe{}, auto: map[string]*autoPeer{}, authLogged: map[string]struct{}{}}
}

func (m *meshActor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *startMsg:
		m.start()
		m.hungSweep()
		c.Respond(true)
	case *hungCheck:
		m.hungSweep()
	case *statusReq:
		c.Respond(m.status())
	case *inboundHello:
		m.onHello(msg)
	case *handshakeFrame:
		m.onHandshakeFrame(msg)
		if msg.done != nil {
			close(msg.done)
		}
	case *dialDone:
		m.onDialDone(msg)
	case *pipeFailed:
		m.dropPipe(msg.p, msg.err)
	case *connClosed:
		if p := m.pipes[msg.id]; p != nil && !p.outbound {
			m.dropPipe(p, fmt.Errorf("%w: connection closed: %v", wire.ErrPeerLost, msg.reason))
		}
	case *peerLost:
		m.dropPipe(msg.p, msg.reason)
	case *redial:
		msg.in.waiting = false
		m.dial(msg.in)
	case *handshakeTimeout:
		if msg.p.getState() == pipeHandshake && m.pipes[msg.p.id] == msg.p {
			m.dropPipe(msg.p, fmt.Errorf("%w: handshake timed out", wire.ErrPeerLost))
		}
	case *setWeight:
		m.applyWeight(msg)
		c.Respond(true)
	case *drainMsg:
		m.announceDrain()
		c.Respond(true)
	case *discChange:
		m.applyChange(msg.c)
		c.Respond(true)
	case *discWeights:
		m.applyDescWeights(msg.descs)
	case *manualMatch:
		m.matchManual(msg)
		c.Respond(true)
	case *stopMsg:
		m.stop()
		c.Respond(true)
	case *actor.Stopping:
		m.stop()
	}
}

func (m *meshActor) local() admission.Identity {
	id := m.n.identity()
	return toAdmission(&id)
}

func toAdmission(id *wire.Identity) admission.Identity {
	return admission.Identity{
		Mesh: id.Mesh, RID: id.RID, Generation: id.Generation, Revision: id.Revision,
		ObjectRole: admissionRole(id.ObjectRole), ServerChannels: len(id.Servers),
		SecurityIdentity: id.SecurityIdentity, Protocol: id.Protocol, Capabilities: id.Capabilities,
	}
}

func admissionRole(r uint8) admission.ObjectRole {
	switch ObjectRole(r) {
	case ObjectClient:
		return admission.RoleClient
	case ObjectServer:
		return admission.RoleServer
	default:
		return admission.RoleNone
	}
}

func (m *meshActor) start() {
	m.adm = admission.New(m.local(), requiredCaps)
	for _, pc := range m.n.cfg.Peers {
		in := &intent{
			cfg:   pc,
			adm:   admission.Intent{Endpoint: pc.Endpoint, ExpectRID: pc.ExpectRID, ConfigGeneration: m.n.cfg.ConfigGeneration},
			state: PeerConnecting,
			since: time.Now(),
		}
		m.intents = append(m.intents, in)
		m.dial(in)
	}
}

// ---- outbound ----------------------------------------------------------

func (m *meshActor) dial(in *intent) {
	if m.stopped || in.removed || in.p != nil || in.state == PeerNotRequired {
		return
	}
	if !m.adm.ShouldDial(in.adm) {
		in.state = PeerNotRequired
		return
	}
	if in.rid != "" {
		if l := (*m.n.links.Load())[in.rid]; l != nil {
			in.state = PeerReady // satisfied by a connection the peer dialed
			return
		}
	}
	n := m.n
	id := n.rid + "/" + strconv.FormatUint(n.gen, 16) + "/" + ident.Hex(4)
	p := &pipe{id: id, outbound: true, intent: in, node: n, closed: make(chan struct{}), started: time.Now()}
	p.state.Store(uint32(pipeHandshake))
	in.p = p
	if in.state != PeerNotConnected {
		in.state = PeerConnecting
	}
	in.attempts++
	ep, err := zguard.Endpoint(in.cfg.Endpoint)
	if err != nil {
		m.onDialDone(&dialDone{in: in, p: p, err: err})
		return
	}
	gcfg := n.guardConfig()
	ok := n.goTracked(func() {
		d := zmq4.NewDealer(zguard.WithConfig(n.ctx, gcfg), zmq4.WithID(zmq4.SocketIdentity(id)),
			zmq4.WithDialerMaxRetries(0), zmq4.WithDialerTimeout(n.cfg.Socket.ReceiveTimeout))
		err := d.Dial(ep)
		var dealer zmq4.Socket
		if err != nil {
			_ = d.Close()
		} else {
			dealer = d
		}
		// The pipe's fields belong to the mesh actor: the socket travels in
		// the message and is attached (or closed) there.
		if terr := n.ref.Tell(&dialDone{in: in, p: p, dealer: dealer, err: err}); terr != nil && dealer != nil {
			_ = dealer.Close()
		}
	})
	if !ok {
		in.p = nil
	}
}

func (m *meshActor) onDialDone(msg *dialDone) {
	p, in := msg.p, msg.in
	// A dial that is no longer wanted (stopped, intent withdrawn or
	// replaced, pipe already closed) only closes its socket.
	if msg.err != nil || m.stopped || in.removed || in.p != p || p.getState() == pipeClosed {
		if msg.dealer != nil {
			_ = msg.dealer.Close()
		}
		if in.p == p {
			in.p = nil
		}
		if !in.removed {
			m.retry(in, msg.err)
		}
		return
	}
	p.dealer = msg.dealer
	n := m.n
	p.w = newWriter(n.cfg.Socket.SendHWM, func(b []byte) error {
		return p.dealer.Send(zmq4.NewMsg(b))
	}, func(err error) { _ = n.ref.Tell(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", wire.ErrPeerLost, err)}) })
	p.w.closer = func() { _ = p.dealer.Close() }
	m.pipes[p.id] = p
	n.goTracked(p.w.run)
	n.goTracked(func() { n.readDealer(p) })
	hello := &wire.Hello{Identity: n.identity(), Nonce: ident.Nonce(), ExpectRID: in.adm.ExpectRID, ConfigGeneration: in.adm.ConfigGeneration}
	p.hello, p.myNonce = hello, hello.Nonce
	if err := p.sendFrame(&wire.Frame{Type: wire.FrameHello, Hello: hello}); err != nil {
		m.dropPipe(p, err)
		return
	}
	m.armHandshakeTimeout(p)
}

func (m *meshActor) armHandshakeTimeout(p *pipe) {
	ref := m.n.ref
	time.AfterFunc(m.n.cfg.Socket.ReceiveTimeout, func() { _ = ref.Tell(&handshakeTimeout{p: p}) })
}

// retry schedules the next dial of in with exponential backoff and jitter.
func (m *meshActor) retry(in *intent, err error) {
	if m.stopped || in.removed || in.state == PeerNotRequired || in.waiting {
		return
	}
	if err != nil {
		in.lastErr = err
	}
	if in.state != PeerNotConnected {
		in.state = PeerNotConnected
		in.since = time.Now()
	}
	backoff := 50 * time.Millisecond << min(in.attempts, 7)
	backoff = min(backoff, 5*time.Second)
	in.waiting = true
	ref := m.n.ref
	time.AfterFunc(jitter(backoff), func() { _ = ref.Tell(&redial{in: in}) })
}

// ---- inbound -----------------------------------------------------------

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
	}, func(err error) { _ = n.ref.Tell(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", wire.ErrPeerLost, err)}) })
	m.pipes[p.id] = p
	n.inbnd.Store(p.id, p)
	n.goTracked(p.w.run)
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

// ---- handshake ---------------------------------------------------------

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

// makeReady turns an admitted pipe into a ready link.
func (m *meshActor) makeReady(p *pipe) {
	n := m.n
	l := &link{rid: p.remote.RID, gen: p.remote.Generation, p: p, objectRole: p.remote.ObjectRole, recvLimit: p.remote.RecvLimit}
	l.draining.Store(p.remote.Draining)
	l.full = make(map[string]*atomic.Bool, len(p.remote.Servers))
	for ch := range p.remote.Servers {
		l.full[ch] = new(atomic.Bool)
	}
	p.link = l
	p.w.maxBatch = int(min(uint64(p.w.maxBatch), max(l.recvLimit, 1<<10)))
	ref, err := n.sys.Spawn(actors.Spec{
		Name: "peer:" + l.rid + "#" + strconv.FormatUint(n.peerSeq.Add(1), 10), Kind: "peer", Parent: n.peers,
		MaxMessages: 4096,
		Producer:    func() actor.Actor { return newPeerActor(n, p, l) },
	})
	if err != nil {
		m.dropPipe(p, err)
		return
	}
	l.peer = ref
	_ = ref.Tell(&peerStart{self: ref})
	p.state.Store(uint32(pipeReady))
	m.publish(func(links map[string]*link) { links[l.rid] = l })
	n.applyMember(l, p.remote.Generation, p.remote.Revision, p.remote.Servers)
	for _, in := range m.intents {
		if in.p == p || (in.rid == l.rid && in.p == nil) {
			in.rid, in.state, in.attempts, in.lastErr, in.since = l.rid, PeerReady, 0, nil, time.Now()
		}
	}
	n.log.Info().Str("peer", l.rid).Str("pipe", p.id).Bool("outbound", p.outbound).Msg("peer ready")
}

// publish swaps the ready-link table (copy on write).
func (m *meshActor) publish(edit func(map[string]*link)) {
	cur := *m.n.links.Load()
	next := make(map[string]*link, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	edit(next)
	m.n.links.Store(&next)
}

// dropPipe closes p and undoes whatever it held: its ready link, its
// pending calls (ErrPeerLost at once), its admission slot; an intent whose
// pipe it was dials again with backoff.
func (m *meshActor) dropPipe(p *pipe, reason error) {
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
	}
	wasReady := p.getState() == pipeReady
	p.close()
	if m.adm != nil {
		m.adm.PipeClosed(p.id)
	}
	if wasReady && p.link != nil {
		l := p.link
		n.cnt.peersLost.Add(1)
		if m.adm != nil {
			// The lifecycle is gone only when no other pipe (a duplicate
			// that replaced this one) is current for it.
			if _, _, ok := m.adm.Current(l.rid); !ok {
				m.adm.PeerLost(l.rid, l.gen)
			}
		}
		if cur := (*n.links.Load())[l.rid]; cur == l {
			m.publish(func(links map[string]*link) { delete(links, l.rid) })
			n.table.Remove(l.rid, l.gen)
		}
		if l.peer != nil {
			stopAsync(l.peer)
		}
		lost := fmt.Errorf("%w: %s: %v", wire.ErrPeerLost, l.rid, reason)
		if errors.Is(reason, wire.ErrPeerLost) {
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
	if in := p.intent; in != nil && in.p == p {
		in.p = nil
		if in.state != PeerNotRequired {
			m.tryUpgrade(in)
			m.retry(in, reason)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (m *meshActor) heartbeat(seq uint64) wire.Envelope { return m.n.heartbeat(seq) }

// heartbeat carries liveness, the current revision with the full Server
// set (so a lost weight update converges without a Location Store), the
// drain flag and the admission headroom of every Server channel.
func (n *Node) heartbeat(seq uint64) wire.Envelope {
	rev := n.revision.Load() // before the weights: see applyWeight
	return wire.Envelope{Kind: wire.KindHeartbeat, Generation: n.gen, Revision: rev,
		Servers: n.servers(), Headroom: n.headroom(), Draining: n.State() == NodeDraining, Seq: seq}
}

// ---- status and stop ---------------------------------------------------

func (m *meshActor) status() Status {
	st := m.n.baseStatus()
	seen := map[string]bool{}
	for _, l := range *m.n.links.Load() {
		ps := PeerStatus{RID: l.rid, State: PeerReady, Outbound: l.p.outbound, Pipe: l.p.id, Since: l.p.started,
			Descriptor: m.descBacked(l.rid)}
		if l.draining.Load() {
			ps.State = PeerDraining
		}
		if l.p.intent != nil {
			ps.Endpoint = l.p.intent.cfg.Endpoint
		} else {
			ps.Endpoint = l.p.remote.Endpoint
		}
		seen[l.rid] = true
		st.Peers = append(st.Peers, ps)
	}
	for _, in := range m.intents {
		if in.rid != "" && seen[in.rid] {
			continue
		}
		rid := in.rid
		if rid == "" {
			rid = in.cfg.ExpectRID
		}
		state := in.state
		if state == PeerReady { // link gone, redial pending
			state = PeerNotConnected
		}
		st.Peers = append(st.Peers, PeerStatus{RID: rid, State: state, Endpoint: in.cfg.Endpoint,
			Outbound: true, LastError: errString(in.lastErr), Since: in.since, Descriptor: in.desc})
	}
	for rid, ap := range m.auto {
		if seen[rid] {
			continue
		}
		ps := PeerStatus{RID: rid, Endpoint: ap.endpoint, Since: ap.since, Descriptor: true}
		switch {
		case ap.kind == wantExcluded:
			ps.State = PeerNotRequired
		case time.Since(ap.since) < m.n.cfg.InboundGrace:
			// The peer has the smaller RID and dials us; within the grace
			// period this is an ordinary connection in progress.
			ps.State = PeerConnecting
		default:
			ps.State = PeerNotConnected
			ps.LastError = "no inbound connection: the peer has the smaller RID and must dial this node"
		}
		st.Peers = append(st.Peers, ps)
	}
	sort.Slice(st.Peers, func(i, j int) bool { return st.Peers[i].RID < st.Peers[j].RID })
	return st
}

func (m *meshActor) stop() {
	if m.stopped {
		return
	}
	m.stopped = true
	for _, p := range m.pipes {
		if p.getState() == pipeReady {
			_ = p.w.control(outItem{env: wire.Envelope{Kind: wire.KindGoodbye}})
		}
	}
	// Give writers a short, bounded chance to flush the goodbyes.
	deadline := time.Now().Add(200 * time.Millisecond)
	for _, p := range m.pipes {
		for p.w.depth() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	for _, p := range m.pipes {
		m.dropPipe(p, wire.ErrShuttingDown)
	}
}

// nopActor is a pure supervisor node in the tree.
type nopActor struct{}

func (nopActor) Receive(actor.Context) {}
