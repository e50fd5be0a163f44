package routemesh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// Capabilities this runtime speaks; a peer missing a required one is refused.
var requiredCaps = []string{"batch-v1"}

// announcedCaps are the capabilities this node states: the required ones
// and the optional ones (capTrace).
var announcedCaps = append(append([]string(nil), requiredCaps...), capTrace)

// DefaultRequestTimeout bounds a request whose context has no deadline, so
// every call ends.
const DefaultRequestTimeout = 10 * time.Second

// frameSlack is what the ZMTP frame may carry beyond the largest envelope
// (batch and envelope headers). The node states its receive limit as the
// largest frame it accepts (recvLimit + frameSlack, what its guarded
// transport enforces); a sender keeps each envelope within the stated
// limit less frameSlack (envelopeLimit).
const frameSlack = 64 << 10

// envelopeLimit is the largest envelope a sender puts in a frame for a
// peer that stated frameLimit (Identity.RecvLimit): frameLimit less
// frameSlack, or half of it when it is under 2×frameSlack.
func envelopeLimit(frameLimit uint64) uint64 {
	if frameLimit < 2*frameSlack {
		return frameLimit / 2
	}
	return frameLimit - frameSlack
}

var errSendQueueFull = fmt.Errorf("%w: send queue to peer full (SendHWM)", zerr.ErrBusy)

// Deps are what a MeshNode needs from its host.
type Deps struct {
	// System spawns the node's actors. Required.
	System *actors.System
	// Parent is the host actor the MeshNode is spawned under; nil = top level.
	Parent *actors.Ref
	// Store is the explicitly configured Location Store, or nil. With a
	// store the node publishes its descriptor under a TTL lease (automatic
	// and manual nodes alike); automatic nodes find their peers through it,
	// and manual nodes with an object role match their endpoints with
	// descriptors. Required for automatic topology.
	Store location.Store

	// transport, when set (routemesh's own tests: an in-memory network),
	// replaces the guarded zmq4 transport.
	transport transport.Transport
}

// Node is one running MeshNode. All methods are safe for concurrent use.
//
// Ownership: the node's mutable state lives in the view (view.go), written
// by the mesh actor only; the actors own everything else (pipes, intents,
// admission and liveness machines). The fields below are either fixed
// before the mesh actor starts, leaf structures with their own
// synchronisation (calls, counters, histograms, the selection table, rng),
// or written once by their single owner (see docs/architecture.md).
type Node struct {
	waits     readyWaits // WaitReady's watch (wait.go)
	cfg       *Config
	log       zerolog.Logger
	sys       *actors.System
	parent    *actors.Ref
	rid       string
	gen       uint64
	trust     wire.Trust
	recvLimit uint64
	endpoint  string
	store     location.Store

	ctx    context.Context
	cancel context.CancelFunc
	// hctx is the parent of every handler's context: cancelled when the
	// node stops admitting, so handlers that honour it return.
	hctx    context.Context
	hcancel context.CancelFunc
	wg      sync.WaitGroup
	writers sync.WaitGroup // pipe writers (a subset of wg): Stop waits for their last flush
	goMu    sync.Mutex
	goDone  bool

	v       atomic.Pointer[view]
	tr      transport.Transport // listens and dials (guarded zmq4 unless a test injects one)
	ln      transport.Listener  // the bound inbound endpoint (a ROUTER)
	calls   *callTable
	corr    atomic.Uint64
	inbnd   sync.Map // pipe id → *pipe for inbound pipes on the ROUTER (written by the mesh actor)
	self    *link
	cnt     counters
	peerSeq atomic.Uint64
	lat     histogram
	beats   beats // the heartbeat loop of every ready pipe (heartbeat.go)

	channels map[string]*channelOwner // immutable after Start
	table    *selection.Table         // channel target table (written by the mesh actor)
	rngMu    sync.Mutex               // guards rng (a leaf: one pick per call)
	rng      *rand.Rand               // weighted selection
	work     workCount                // admitted inbound work not yet finished (drain, stop)
	// directServed counts what the Node-direct scope served.
	directServed *servedStats
	directPool   *handlerPool // Node-direct running handlers and their deadlines (hung.go; shared by every owner incarnation)
	// incarnations counts mesh actor incarnations (each one's epoch).
	incarnations atomic.Uint64
	callsClosed  atomic.Bool // Stop has failed every pending call (written by Stop)
	// onRevision, when set (a Location Store is configured), republishes
	// the descriptor after a weight change or drain. Set before the mesh
	// actor starts; runs on the mesh actor.
	onRevision func()
	lease      *lease             // descriptor publisher; nil without a store
	exts       []namedExtension   // built once at Start (extension.go)
	kinds      []string           // Spot kinds published in the descriptor (hostedKinds); fixed at Start
	dctx       context.Context    // discovery and lease; cancelled first on Stop
	dcancel    context.CancelFunc //
	mview      meshViewBox        // the mesh as discovery read it last (discovery_view.go)

	// meshRef is the mesh actor: the same Ref across the actor's restarts,
	// a new one when the host respawned it. Stored by the actor itself.
	meshRef atomic.Pointer[actors.Ref]
	ready   chan struct{} // closed when the node first becomes ready
	readyMu sync.Once
	failErr atomic.Pointer[error] // why the node failed (Failed state)
	ownedFlags

	stopOnce sync.Once
	stopErr  error
}

// link is a ready connection callers submit to (or the local node).
type link struct {
	rid        string
	gen        uint64
	p          *pipe // nil for the local node
	objectRole uint8
	recvLimit  uint64
	trace      bool // the peer reads an envelope's trace context (capTrace)
	// draining and full are what the peer last reported, written by the
	// link's peer actor (and full also by a caller reading a reply's
	// headroom): hints for selection, leaf atomics.
	draining atomic.Bool
	peer     *actors.Ref
	full     map[string]*atomic.Bool // per Server channel of the peer: last reported at capacity
	// knownRev is the peer's Server-set revision the table is known to
	// hold (memberUpdate): a heartbeat that repeats it costs no lookup.
	knownRev atomic.Uint64
}

// Start binds the MeshNode's ROUTER, spawns its mesh actor (which spawns
// its children and starts the manual connection intents) and waits until
// the node is ready or ctx ends.
func Start(ctx context.Context, cfg *Config, deps Deps) (*Node, error) {
	if err := cfg.validate(deps.Store != nil); err != nil {
		return nil, err
	}
	if deps.System == nil {
		return nil, &ConfigError{Mesh: cfg.Mesh, Err: ErrInvalid, Detail: "no actor system"}
	}
	n := &Node{cfg: cfg, sys: deps.System, parent: deps.Parent, store: deps.Store, calls: newCallTable(),
		ready: make(chan struct{})}
	n.routerReady = make(chan struct{})
	n.gen = ident.Generation()
	n.beats.n = n
	n.rid = cfg.RID
	switch {
	case cfg.RIDPrefix != "":
		n.rid = cfg.RIDPrefix + "-" + ident.Hex(6)
	case n.rid == "":
		n.rid = "node-" + ident.Hex(6)
	}
	trust, meshTLS, err := cfg.security()
	if err != nil {
		return nil, err
	}
	n.trust = trust
	n.recvLimit = uint64(cfg.Socket.MailboxByteBudget)
	if n.recvLimit > wire.MaxFrameSize-frameSlack {
		n.recvLimit = wire.MaxFrameSize - frameSlack
	}
	n.log = cfg.Logger.With().Str("mesh", cfg.Mesh).Str("rid", n.rid).Logger()
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.dctx, n.dcancel = context.WithCancel(context.Background())
	n.hctx, n.hcancel = context.WithCancel(context.Background())
	n.self = &link{rid: n.rid, gen: n.gen, objectRole: uint8(cfg.ObjectRole), recvLimit: n.recvLimit}
	n.table = selection.NewTable()
	n.rng = newRand(cfg.SelectionSeed)
	n.work.init()
	n.initChannels()
	closeAll := func() {
		n.cancel()
		n.hcancel()
		n.dcancel()
	}

	// The ROUTER belongs to the node, not to an actor instance: its
	// endpoint never changes while the node runs, restarts included.
	n.tr = deps.transport
	if n.tr == nil {
		g := n.guardConfig()
		g.TLS = meshTLS
		n.tr = transport.NewZMQ(n.ctx, transport.ZMQConfig{Guard: g, ListenerID: "router/" + n.rid,
			DialTimeout: cfg.Socket.ReceiveTimeout, OnTLSRefused: newTLSLog(n.log).refused})
	}
	ln, err := n.tr.Listen(cfg.Listen, transport.Events{OnClosed: func(id string, reason error) {
		if ref := n.mesh(); ref != nil {
			_ = ref.TellControl(&connClosed{id: id, reason: reason})
		}
	}, OnRefused: newRefusalLog(n.log, &n.cnt.connectionsRefused, time.Now).refused, OnFrame: n.onRouterFrame})
	if err != nil {
		closeAll()
		if errors.Is(err, transport.ErrBadEndpoint) {
			return nil, &ConfigError{Mesh: cfg.Mesh, Err: ErrInvalid, Detail: err.Error()}
		}
		return nil, fmt.Errorf("zlink: mesh %s: listen %s: %w", cfg.Mesh, cfg.Listen, err)
	}
	n.ln = ln
	n.endpoint = ident.Advertised(n.ln.Addr(), cfg.AdvertiseHost)
	n.log = n.log.With().Str("endpoint", n.endpoint).Logger()
	if err := n.startExtensions(); err != nil {
		_ = n.ln.Close()
		closeAll()
		return nil, err
	}
	// After the extensions: the descriptor lists the kinds they host.
	n.kinds = n.hostedKinds()
	if deps.Store != nil {
		n.lease = newLease(n, deps.Store, n.descriptor())
		le := n.lease
		n.onRevision = func() { le.set(n.descriptor()) }
	}
	if err := n.waitForRID(ctx); err != nil {
		_ = n.ln.Close()
		closeAll()
		return nil, err
	}

	n.beats.start()
	// The mesh actor does the rest in its Started, on every (re)start.
	spec := n.meshSpec()
	spec.Parent = deps.Parent
	meshRef, err := n.sys.Spawn(spec)
	fail := func(err error) (*Node, error) {
		if meshRef != nil {
			_ = meshRef.Stop(context.Background())
		}
		n.goMu.Lock()
		n.goDone = true
		n.goMu.Unlock()
		_ = n.ln.Close()
		closeAll()
		n.wg.Wait()
		return nil, err
	}
	if err != nil {
		return fail(fmt.Errorf("zlink: spawn mesh actor: %w", err))
	}
	select {
	case <-n.ready:
	case <-meshRef.Done():
		return fail(fmt.Errorf("zlink: mesh %s: start: %w", cfg.Mesh, n.failure()))
	case <-ctx.Done():
		return fail(fmt.Errorf("zlink: mesh %s: start: %w", cfg.Mesh, ctx.Err()))
	}
	if n.lease != nil {
		// Published before Start returns; the lease actor keeps it alive.
		d, _ := n.lease.take()
		n.lease.published.Store(n.lease.put(ctx, d))
	}
	n.log.Info().Msg("meshnode ready")
	return n, nil
}

// mesh returns the mesh actor (nil before its first start).
func (n *Node) mesh() *actors.Ref { return n.meshRef.Load() }

// needsDiscovery reports whether the node runs a discovery actor:
// automatic nodes, and manual nodes with an object role and manual
// endpoints (to match them with descriptors).
// needsDiscovery: automatic topology, or a node with an object role
// (descriptor-based manual endpoints, and the mesh view the Spot runtime
// places with).
func (n *Node) needsDiscovery() bool {
	return n.store != nil && (n.cfg.Automatic() || n.cfg.ObjectRole != ObjectNone)
}

func (n *Node) guardConfig() zguard.Config {
	g := zguard.DefaultConfig()
	g.HandshakeTimeout = n.cfg.Socket.ReceiveTimeout
	g.WriteTimeout = n.cfg.sendTimeout()
	g.MaxFrame = n.recvLimit + frameSlack
	return g
}

// goTracked starts fn on a goroutine that Stop waits for; after Stop it
// refuses to start anything.
func (n *Node) goTracked(fn func()) bool {
	n.goMu.Lock()
	defer n.goMu.Unlock()
	if n.goDone {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
	return true
}

// goWriter runs a pipe's writer loop as a tracked goroutine, now and at
// each later start (the loop ends whenever the writer goes idle). A panic
// in the loop drops the pipe, like a failed send. A start allocates
// nothing: both functions are made here, once per pipe.
func (n *Node) goWriter(w *writer) bool {
	body := func() {
		defer n.wg.Done()
		defer n.writers.Done()
		defer func() {
			if r := recover(); r != nil {
				n.log.Error().Interface("panic", r).Msg("pipe writer panicked")
				w.onError(fmt.Errorf("%w: writer panicked: %v", zerr.ErrPeerLost, r))
			}
		}()
		w.run()
	}
	w.spawn = func() bool {
		n.goMu.Lock()
		defer n.goMu.Unlock()
		if n.goDone {
			return false
		}
		n.wg.Add(1)
		n.writers.Add(1)
		go body()
		return true
	}
	return w.spawn()
}

// RID returns the node's Routing ID.
func (n *Node) RID() string { return n.rid }

// Mesh returns the MeshName.
func (n *Node) Mesh() string { return n.cfg.Mesh }

// Generation returns the lifecycle generation (non-zero, new on every start).
func (n *Node) Generation() uint64 { return n.gen }

// Endpoint returns the actual bound endpoint as peers should dial it.
func (n *Node) Endpoint() string { return n.endpoint }

// State returns the lifecycle state.
func (n *Node) State() NodeState { return n.load().state }

// Status returns a copied snapshot. It is answered by the mesh actor and
// never enters an application mailbox; a stopped or failed node answers
// from its last view.
func (n *Node) Status(ctx context.Context) (Status, error) {
	if st := n.State(); st == NodeStopped || st == NodeFailed {
		return n.baseStatus(), nil
	}
	v, err := n.mesh().Request(ctx, &statusReq{})
	if err != nil {
		st := n.baseStatus()
		return st, err
	}
	return v.(Status), nil
}

func (n *Node) baseStatus() Status {
	v := n.load()
	st := Status{
		Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen, Revision: v.revision,
		State: v.state, Endpoint: n.endpoint, ObjectRole: n.cfg.ObjectRole.String(),
		Peers: []PeerStatus{}, Channels: n.channelStatus(v), Counters: n.cnt.snapshot(),
		Latency: n.lat.snapshot(), LatencySum: time.Duration(n.lat.sumNs.Load()), Inflight: n.work.load(),
		Hung: v.hung, AdmissionPaused: v.paused, Security: n.securityStatus(), Served: n.served(),
	}
	st.Drained = v.state == NodeDraining && st.Inflight == 0
	if e := n.failErr.Load(); e != nil {
		st.Failure = (*e).Error()
	}
	return st
}

func (n *Node) channelStatus(v *view) []ChannelStatus {
	out := make([]ChannelStatus, 0, len(n.cfg.channels))
	for _, c := range n.cfg.channels {
		cs := ChannelStatus{Name: c.name, Role: c.role.String()}
		if c.role == RoleServer {
			cs.Weight = int(v.weights[c.name])
		}
		if co := n.channels[c.name]; co != nil {
			cs.LastSelection = co.last.Load()
		}
		out = append(out, cs)
	}
	return out
}

// identity is what this node states in handshakes.
func (n *Node) identity() wire.Identity {
	v := n.load() // revision and weights from one view: always a matching pair
	return wire.Identity{
		Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen, Revision: v.revision,
		ObjectRole: uint8(n.cfg.ObjectRole), Servers: v.weights,
		SecurityIdentity: n.trust.SecurityIdentity(), Endpoint: n.endpoint,
		Protocol: wire.ProtocolVersion, Capabilities: announcedCaps, RecvLimit: n.recvLimit + frameSlack,
		Draining: v.state == NodeDraining,
	}
}

// servers returns this node's current Server weights (do not modify).
func (n *Node) servers() map[string]uint16 { return n.load().weights }
