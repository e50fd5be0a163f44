package routemesh

import (
	"fmt"
	"time"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/wire"
)

// Messages of the mesh actor.
type (
	stopMsg      struct{ reason error }
	beginStop    struct{}
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
		in   *intent
		p    *pipe
		conn transport.Conn // the dialed pipe (nil on error); owned by the mesh actor from here on
		err  error
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
	// memberUpdate is a peer's Server set, sent by its peer actor; it
	// changes the table only while p is the peer's current ready pipe.
	memberUpdate struct {
		p        *pipe
		gen, rev uint64
		servers  map[string]uint16
	}
	// channelsUp reports the channel owners spawned by the channels
	// supervisor of mesh actor incarnation epoch.
	channelsUp struct {
		epoch  uint64
		owners map[string]*actors.Ref
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
// connection intents, and the node's view (view.go) that callers read. It
// never blocks: dials run on tracked goroutines and report back.
//
// Restart is rebuild: every incarnation does all its setup in Started
// (children, admission machine, intents from the configuration, the view
// from the last published one), and the old incarnation tears down in
// Restarting (goodbye to peers, every pipe dropped so its calls end
// ErrPeerLost, intents withdrawn so late dial results and timers of the
// old incarnation change nothing).
type meshActor struct {
	n       *Node
	self    *actors.Ref
	epoch   uint64 // incarnation: stale timers and reports are ignored
	adm     *admission.Machine
	pipes   map[string]*pipe
	intents []*intent
	auto    map[string]*autoPeer // automatic peers this node does not dial
	stopped bool
	resume  NodeState       // the state to resume once the channel owners are up
	c       *actors.Context // this incarnation's context: spawns children
	// authLogged remembers endpoint+generation pairs whose authentication
	// failure was logged, so each is logged once.
	authLogged map[string]struct{}
	// gone lists the peers whose ready connection ended lately (members.go).
	gone []GonePeer
}

func newMeshActor(n *Node) *meshActor {
	return &meshActor{n: n, pipes: map[string]*pipe{}, auto: map[string]*autoPeer{}, authLogged: map[string]struct{}{}}
}

var _ actors.FailureHandler = (*meshActor)(nil)

func (m *meshActor) Receive(c *actors.Context) {
	switch msg := c.Message().(type) {
	case *actors.Started:
		m.start(c)
	case *actors.Restarting:
		m.teardown(fmt.Errorf("%w: the MeshNode's actors restarted", zerr.ErrPeerLost))
	case *actors.Stopping:
		// Stopped by Stop, or by the host restarting (which spawns a new
		// mesh actor next): only the first is a shutdown for the calls.
		reason := error(zerr.ErrShuttingDown)
		if st := m.n.State(); st != NodeStopping && st != NodeStopped {
			reason = fmt.Errorf("%w: the MeshNode's actors restarted", zerr.ErrPeerLost)
		}
		m.teardown(reason)
	case *channelsUp:
		m.onChannelsUp(msg)
	case *hungCheck:
		if msg.epoch == m.epoch {
			m.hungSweep()
		}
	case *statusReq:
		c.Respond(m.status())
	case *beginStop:
		m.n.setState(NodeStopping)
		c.Respond(true)
	case *stopMsg:
		m.teardown(msg.reason)
		c.Respond(true)
	default:
		if !m.onConnection(msg) {
			m.onControl(c, msg)
		}
	}
}

// onConnection handles the messages of connections and their handshakes;
// it reports false for any other message.
func (m *meshActor) onConnection(msg any) bool {
	switch msg := msg.(type) {
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
			m.dropPipe(p, fmt.Errorf("%w: connection closed: %v", zerr.ErrPeerLost, msg.reason))
		}
	case *peerLost:
		m.dropPipe(msg.p, msg.reason)
	case *memberUpdate:
		m.applyMember(msg.p, msg.gen, msg.rev, msg.servers)
	case *redial:
		msg.in.waiting = false
		m.dial(msg.in)
	case *handshakeTimeout:
		m.onHandshakeTimeout(msg.p)
	default:
		return false
	}
	return true
}

// onControl handles the operator's and discovery's messages: weights,
// drain, the mesh's changes.
func (m *meshActor) onControl(c *actors.Context, msg any) {
	switch msg := msg.(type) {
	case *setWeight:
		m.applyWeight(msg)
		c.Respond(true)
	case *drainMsg:
		c.Respond(m.drain())
	case *undrainMsg:
		c.Respond(m.undrain())
	case *discChange:
		m.applyChange(msg.c)
		ackDisc(c, msg.ack, msg.seq)
	case *discWeights:
		m.applyDescWeights(msg.descs)
	case *manualMatch:
		m.matchManual(msg)
		ackDisc(c, msg.ack, msg.seq)
	}
}

// MessageFailed answers the message the actor panicked on (the panic is
// the supervisor's business; the message must not leave anyone waiting).
func (m *meshActor) MessageFailed(msg any) { m.release(msg) }

// MessageDropped answers a message left in the mailbox when the actor
// stopped.
func (m *meshActor) MessageDropped(msg any) { m.release(msg) }

func (m *meshActor) release(msg any) {
	switch msg := msg.(type) {
	case *handshakeFrame:
		if msg.done != nil {
			select {
			case <-msg.done:
			default:
				close(msg.done)
			}
		}
	case *dialDone:
		if msg.conn != nil {
			_ = msg.conn.Close()
		}
	case *discChange: // discovery moves on (its next round redoes what is missing)
		if msg.ack != nil {
			_ = msg.ack.TellControl(&discApplied{seq: msg.seq})
		}
	case *manualMatch:
		if msg.ack != nil {
			_ = msg.ack.TellControl(&discApplied{seq: msg.seq})
		}
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

// start builds this incarnation: children, admission, intents, view.
// Spawning a child can fail only when the actor system is shutting down;
// then this panics, and the supervisor decides.
func (m *meshActor) start(c *actors.Context) {
	n := m.n
	m.self, m.c = c.Self(), c
	n.meshRef.Store(m.self) // the same Ref across restarts; a new one after the host respawned it
	m.epoch = n.incarnations.Add(1)
	prev := n.v.Load()
	m.resume = NodeReady
	if prev == nil {
		n.v.Store(&view{state: NodeStarting, revision: 1, weights: n.initialWeights(), links: map[string]*link{}})
	} else {
		if prev.state == NodeDraining {
			m.resume = NodeDraining
		}
		n.update(func(v *view) {
			if v.state != NodeDraining {
				v.state = NodeStarting
			}
			v.links, v.direct, v.owners = map[string]*link{}, nil, nil
		})
	}
	v := n.load()
	n.table.Apply(selection.Member{RID: n.rid, Generation: n.gen, Revision: v.revision, Servers: v.weights, Local: true})

	direct := m.spawn(c, n.directSpec())
	n.update(func(v *view) { v.direct = direct })
	epoch := m.epoch
	m.spawn(c, actors.Spec{Name: "channels", Kind: "supervisor", MaxMessages: ownedMailboxMessages, Supervisor: supervisor.DefaultConfig(),
		Producer: func() actors.Actor { return &channelsActor{n: n, mesh: m.self, epoch: epoch} }})
	m.spawn(c, actors.Spec{Name: "listener", Kind: "listener", MaxMessages: ownedMailboxMessages, Producer: func() actors.Actor { return &listenerActor{n: n} }})
	if n.lease != nil {
		m.spawn(c, actors.Spec{Name: "lease", Kind: "lease", MaxMessages: ownedMailboxMessages, Producer: func() actors.Actor { return &leaseActor{n: n} }})
	}
	if n.needsDiscovery() {
		m.spawn(c, n.discoverySpec())
	}
	for _, e := range n.exts {
		m.spawn(c, e.ext.Spec())
	}

	m.adm = admission.New(m.local(), requiredCaps)
	for _, pc := range n.cfg.Peers {
		in := &intent{
			cfg:   pc,
			adm:   admission.Intent{Endpoint: pc.Endpoint, ExpectRID: pc.ExpectRID, ConfigGeneration: n.cfg.ConfigGeneration},
			state: PeerConnecting,
			since: time.Now(),
		}
		m.intents = append(m.intents, in)
		m.dial(in)
	}
	m.hungSweep()
}

func (m *meshActor) spawn(c *actors.Context, spec actors.Spec) *actors.Ref {
	ref, err := c.Spawn(spec)
	if err != nil {
		panic(fmt.Errorf("zlink: mesh %s: spawn %s: %w", m.n.cfg.Mesh, spec.Name, err))
	}
	return ref
}

// onChannelsUp installs the channel owners of this incarnation; the node
// is ready (or draining again) from here on.
func (m *meshActor) onChannelsUp(msg *channelsUp) {
	if msg.epoch != m.epoch || m.stopped {
		return
	}
	n := m.n
	v := n.update(func(v *view) {
		v.owners = msg.owners
		if v.state == NodeStarting {
			v.state = m.resume
		}
	})
	if v.state == NodeReady || v.state == NodeDraining {
		n.readyMu.Do(func() { close(n.ready) })
	}
}

// teardown ends this incarnation: peers get a goodbye (flushed by each
// writer as it stops), every pipe is dropped (its pending calls end with
// ErrPeerLost, or ErrShuttingDown on Stop) and every intent is withdrawn.
// The children are stopped by the actor system.
func (m *meshActor) teardown(reason error) {
	if m.stopped {
		return
	}
	m.stopped = true
	for _, p := range m.pipes {
		if p.getState() == pipeReady {
			_ = p.w.control(outItem{env: wire.Envelope{Kind: wire.KindGoodbye}})
		}
	}
	for _, p := range m.pipes {
		m.dropPipe(p, reason)
	}
	for _, in := range m.intents {
		in.removed = true
		if in.p != nil {
			in.p.close()
		}
	}
	m.intents = nil
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
	v := n.load()
	return wire.Envelope{Kind: wire.KindHeartbeat, Generation: n.gen, Revision: v.revision,
		Servers: v.weights, Headroom: n.headroom(v), Draining: v.state == NodeDraining, Seq: seq}
}
