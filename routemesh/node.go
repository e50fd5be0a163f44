package routemesh

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/ident"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/selection"
	"github.com/zlink-go/zlink/supervisor"
	"github.com/zlink-go/zlink/wire"
)

// Capabilities this runtime speaks; a peer missing a required one is refused.
var requiredCaps = []string{"batch-v1"}

// DefaultRequestTimeout bounds a request whose context has no deadline, so
// every call ends.
const DefaultRequestTimeout = 10 * time.Second

// frameSlack is what the ZMTP frame may carry beyond the largest envelope
// (batch and envelope headers).
const frameSlack = 64 << 10

var errSendQueueFull = fmt.Errorf("%w: send queue to peer full (SendHWM)", wire.ErrBusy)

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
}

// Node is one running MeshNode. All methods are safe for concurrent use.
type Node struct {
	cfg       *Config
	log       zerolog.Logger
	sys       *actors.System
	rid       string
	gen       uint64
	revision  atomic.Uint64
	trust     wire.Trust
	recvLimit uint64
	endpoint  string

	ctx    context.Context
	cancel context.CancelFunc
	// hctx is the parent of every handler's context: cancelled when the
	// node stops admitting, so handlers that honour it return.
	hctx    context.Context
	hcancel context.CancelFunc
	wg      sync.WaitGroup
	goMu    sync.Mutex
	goDone  bool

	router  zmq4.Socket
	state   atomic.Uint32
	calls   *callTable
	corr    atomic.Uint64
	links   atomic.Pointer[map[string]*link] // ready peers by RID (copy-on-write, written by the mesh actor)
	inbnd   sync.Map                         // pipe id → *pipe for inbound pipes on the ROUTER
	self    *link
	cnt     counters
	peerSeq atomic.Uint64
	lat     histogram

	channels map[string]*channelOwner          // immutable after Start
	weights  atomic.Pointer[map[string]uint16] // this node's Server weights (written by the mesh actor)
	table    *selection.Table                  // channel target table (members and their weights)
	rngMu    sync.Mutex                        // guards rng (a leaf: one pick per call)
	rng      *rand.Rand                        // weighted selection
	inflight atomic.Int64                      // admitted inbound messages not yet handled
	running  atomic.Int64                      // running handler goroutines
	// Hung-handler detection (hung.go).
	directTrack *hungTracker
	hung        atomic.Int64 // hung handlers at the last sweep
	admitPaused atomic.Bool  // too many hung handlers: refuse new work
	callsClosed atomic.Bool  // Stop has failed every pending call
	drained     atomic.Bool
	// onRevision, when set (a Location Store is configured), republishes
	// the descriptor after a weight change or drain. Runs on the mesh actor.
	onRevision func()
	lease      *lease             // descriptor publisher; nil without a store
	dctx       context.Context    // discovery and lease; cancelled first on Stop
	dcancel    context.CancelFunc //
	disc       *actors.Ref        // discovery actor; nil when not running

	ref    *actors.Ref // mesh:<name>
	peers  *actors.Ref // peers supervisor
	direct *actors.Ref // Node-direct owner

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
	draining   atomic.Bool
	peer       *actors.Ref
	full       map[string]*atomic.Bool // per Server channel of the peer: last reported at capacity
}

// Start binds the MeshNode's ROUTER, spawns its actors and starts its
// manual connection intents. The Config must have passed Topology.Validate.
func Start(ctx context.Context, cfg *Config, deps Deps) (*Node, error) {
	if err := cfg.validate(deps.Store != nil); err != nil {
		return nil, err
	}
	if deps.System == nil {
		return nil, &ConfigError{Mesh: cfg.Mesh, Err: ErrInvalid, Detail: "no actor system"}
	}
	zguard.Register()
	n := &Node{cfg: cfg, sys: deps.System, calls: newCallTable()}
	n.state.Store(uint32(NodeStarting))
	n.gen = ident.Generation()
	n.revision.Store(1)
	n.rid = cfg.RID
	switch {
	case cfg.RIDPrefix != "":
		n.rid = cfg.RIDPrefix + "-" + ident.Hex(6)
	case n.rid == "":
		n.rid = "node-" + ident.Hex(6)
	}
	n.trust = wire.NewTrust(cfg.Trust.Profile, cfg.Trust.Secret)
	n.recvLimit = uint64(cfg.Socket.MailboxByteBudget)
	if n.recvLimit > wire.MaxFrameSize-frameSlack {
		n.recvLimit = wire.MaxFrameSize - frameSlack
	}
	n.log = cfg.Logger.With().Str("mesh", cfg.Mesh).Str("rid", n.rid).Logger()
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.dctx, n.dcancel = context.WithCancel(context.Background())
	n.hctx, n.hcancel = context.WithCancel(context.Background())
	empty := map[string]*link{}
	n.links.Store(&empty)
	n.self = &link{rid: n.rid, gen: n.gen, objectRole: uint8(cfg.ObjectRole), recvLimit: n.recvLimit}
	n.table = selection.NewTable()
	n.rng = newRand(cfg.SelectionSeed)

	// Actors: mesh:<name> → peers, direct.
	meshRef, err := n.sys.Spawn(actors.Spec{
		Name: "mesh:" + cfg.Mesh, Kind: "meshnode", Parent: deps.Parent,
		MaxMessages: 1 << 16, MaxBytes: 0,
		Supervisor: supervisor.DefaultConfig(),
		Producer:   func() actor.Actor { return newMeshActor(n) },
	})
	if err != nil {
		n.cancel()
		n.hcancel()
		return nil, fmt.Errorf("zlink: spawn mesh actor: %w", err)
	}
	n.ref = meshRef
	fail := func(err error) (*Node, error) {
		n.cancel()
		n.hcancel()
		n.dcancel()
		_ = meshRef.Stop(context.Background())
		return nil, err
	}
	if n.peers, err = n.sys.Spawn(actors.Spec{
		Name: "peers", Kind: "supervisor", Parent: meshRef,
		Supervisor: supervisor.DefaultConfig(),
		Producer:   func() actor.Actor { return nopActor{} },
	}); err != nil {
		return fail(err)
	}
	directSlots := make(chan struct{}, cfg.HandlerConcurrency)
	n.directTrack = newHungTracker()
	if n.direct, err = n.sys.Spawn(actors.Spec{
		Name: "direct", Kind: "owner", Parent: meshRef,
		MaxMessages: cfg.Socket.MailboxMessageBudget, MaxBytes: cfg.Socket.MailboxByteBudget,
		Producer: func() actor.Actor {
			return &ownerActor{n: n, requests: cfg.directRequests, sends: cfg.directSends, slots: directSlots, track: n.directTrack}
		},
	}); err != nil {
		return fail(err)
	}
	if err := n.startChannels(meshRef); err != nil {
		return fail(err)
	}

	// Bind the ROUTER through the guarded transport.
	gcfg := n.guardConfig()
	gcfg.OnConnClosed = func(ev zguard.ConnEvent) {
		// A connection refused for claiming a live identity is not the
		// live pipe closing.
		if ev.Identity != "" && !errors.Is(ev.Reason, zguard.ErrDuplicateIdentity) {
			_ = n.ref.Tell(&connClosed{id: ev.Identity, reason: ev.Reason})
		}
	}
	n.router = zmq4.NewRouter(zguard.WithConfig(n.ctx, gcfg), zmq4.WithID(zmq4.SocketIdentity("router/"+n.rid)))
	lep, err := zguard.Endpoint(cfg.Listen)
	if err != nil {
		return fail(&ConfigError{Mesh: cfg.Mesh, Err: ErrInvalid, Detail: err.Error()})
	}
	if err := n.router.Listen(lep); err != nil {
		_ = n.router.Close()
		return fail(fmt.Errorf("zlink: mesh %s: listen %s: %w", cfg.Mesh, cfg.Listen, err))
	}
	n.endpoint = ident.Advertised(n.router.Addr(), cfg.AdvertiseHost)
	n.log = n.log.With().Str("endpoint", n.endpoint).Logger()
	n.goTracked(n.readRouter)

	// Intents and readiness are applied by the mesh actor, in order.
	if _, err := meshRef.Request(ctx, &startMsg{}); err != nil {
		_ = n.router.Close()
		return fail(fmt.Errorf("zlink: mesh %s: start: %w", cfg.Mesh, err))
	}
	n.state.Store(uint32(NodeReady))
	if deps.Store != nil {
		if err := n.startStore(ctx, deps.Store); err != nil {
			n.dcancel()
			_, _ = meshRef.Request(context.Background(), &stopMsg{})
			n.goMu.Lock()
			n.goDone = true
			n.goMu.Unlock()
			_ = n.router.Close()
			n.cancel()
			n.wg.Wait()
			return fail(err)
		}
	}
	n.log.Info().Msg("meshnode ready")
	return n, nil
}

// startStore publishes the descriptor (after bind, so the endpoint is the
// real one), starts its lease and, for automatic nodes and manual nodes
// with an object role and manual endpoints, the discovery actor. A store
// that is unreachable at start does not fail Start: the lease keeps trying.
func (n *Node) startStore(ctx context.Context, store location.Store) error {
	le := newLease(n, store, n.descriptor())
	d, _ := le.take()
	published := le.put(ctx, d)
	n.lease = le
	n.onRevision = func() { le.set(n.descriptor()) }
	if !n.goTracked(func() { le.run(n.dctx, published) }) {
		close(le.done)
		return wire.ErrShuttingDown
	}
	if n.cfg.Automatic() || (n.cfg.ObjectRole != ObjectNone && len(n.cfg.Peers) > 0) {
		if err := n.startDiscovery(store); err != nil {
			return fmt.Errorf("zlink: mesh %s: start discovery: %w", n.cfg.Mesh, err)
		}
	}
	return nil
}

func (n *Node) guardConfig() zguard.Config {
	g := zguard.DefaultConfig()
	g.HandshakeTimeout = n.cfg.Socket.ReceiveTimeout
	g.WriteTimeout = n.cfg.Socket.SendTimeout
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

// RID returns the node's Routing ID.
func (n *Node) RID() string { return n.rid }

// Mesh returns the MeshName.
func (n *Node) Mesh() string { return n.cfg.Mesh }

// Generation returns the lifecycle generation (non-zero, new on every start).
func (n *Node) Generation() uint64 { return n.gen }

// Endpoint returns the actual bound endpoint as peers should dial it.
func (n *Node) Endpoint() string { return n.endpoint }

// State returns the lifecycle state.
func (n *Node) State() NodeState { return NodeState(n.state.Load()) }

// Ref returns the MeshNode actor (for the host's tree).
func (n *Node) Ref() *actors.Ref { return n.ref }

// Status returns a copied snapshot. It is answered by the mesh actor and
// never enters an application mailbox.
func (n *Node) Status(ctx context.Context) (Status, error) {
	if n.State() == NodeStopped {
		return n.baseStatus(), nil
	}
	v, err := n.ref.Request(ctx, &statusReq{})
	if err != nil {
		st := n.baseStatus()
		return st, err
	}
	return v.(Status), nil
}

func (n *Node) baseStatus() Status {
	return Status{
		Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen, Revision: n.revision.Load(),
		State: n.State(), Endpoint: n.endpoint, ObjectRole: n.cfg.ObjectRole.String(),
		Peers: []PeerStatus{}, Channels: n.channelStatus(), Counters: n.cnt.snapshot(),
		Latency: n.lat.snapshot(), Drained: n.drained.Load(), Inflight: n.inflight.Load(),
		Hung: n.hung.Load(), AdmissionPaused: n.admitPaused.Load(),
	}
}

func (n *Node) channelStatus() []ChannelStatus {
	out := make([]ChannelStatus, 0, len(n.cfg.channels))
	weights := n.servers()
	for _, c := range n.cfg.channels {
		cs := ChannelStatus{Name: c.name, Role: c.role.String()}
		if c.role == RoleServer {
			cs.Weight = int(weights[c.name])
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
	rev := n.revision.Load() // before the weights: see applyWeight
	servers := n.servers()
	return wire.Identity{
		Mesh: n.cfg.Mesh, RID: n.rid, Generation: n.gen, Revision: rev,
		ObjectRole: uint8(n.cfg.ObjectRole), Servers: servers,
		SecurityIdentity: n.trust.SecurityIdentity(), Endpoint: n.endpoint,
		Protocol: wire.ProtocolVersion, Capabilities: requiredCaps, RecvLimit: n.recvLimit,
		Draining: n.State() == NodeDraining,
	}
}
