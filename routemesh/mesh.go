package routemesh

import (
	"fmt"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/go-zeromq/zmq4"

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
		m.onHandshakeTimeout(msg.p)
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

// ---- handshake ---------------------------------------------------------

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
