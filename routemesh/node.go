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
	"github.com/zlink-go/zlink/mailbox"
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

// ---- calls -------------------------------------------------------------

// Request sends a Node-direct request to the MeshNode rid of this mesh and
// waits for its one terminal result: the reply, or an error matching
// ErrNoTarget, ErrTimeout, ErrBusy, ErrPeerLost, ErrTooLarge, ErrHandler,
// ErrCancelled or ErrShuttingDown. rid may be this node's own RID: the call
// then goes through the same admission, correlation and completion.
func (n *Node) Request(ctx context.Context, rid, packet string, payload []byte) ([]byte, error) {
	n.cnt.calls.Add(1)
	l, err := n.directTarget(rid)
	if err != nil {
		n.cnt.result(err)
		return nil, err
	}
	out, err := n.call(ctx, l, wire.Envelope{Kind: wire.KindRequest, Packet: packet, Payload: payload})
	n.cnt.result(err)
	return out, err
}

// Send sends a one-way Node-direct message. It ends when the message is
// queued for the peer (or refused); there is no reply.
func (n *Node) Send(ctx context.Context, rid, packet string, payload []byte) error {
	n.cnt.calls.Add(1)
	l, err := n.directTarget(rid)
	if err == nil {
		err = n.submitOneWay(ctx, l, wire.Envelope{Kind: wire.KindSend, Packet: packet, Payload: payload})
	}
	n.cnt.result(err)
	return err
}

func (n *Node) directTarget(rid string) (*link, error) {
	if st := n.State(); st >= NodeStopping {
		return nil, wire.ErrShuttingDown
	}
	var l *link
	if rid == n.rid {
		l = n.self
	} else {
		l = (*n.links.Load())[rid]
	}
	if l == nil {
		return nil, fmt.Errorf("%w: no ready MeshNode %q in mesh %s", wire.ErrNoTarget, rid, n.cfg.Mesh)
	}
	if l.objectRole == uint8(ObjectClient) {
		return nil, fmt.Errorf("%w: MeshNode %q is an Object Client", wire.ErrNoTarget, rid)
	}
	return l, nil
}

// submit hands an envelope to a link: the peer's writer, or for the local
// node the same owner admission the reader uses for remote envelopes.
func (n *Node) submit(l *link, e wire.Envelope) error {
	if err := wire.CheckLimit(e.Size(), l.recvLimit); err != nil {
		return err
	}
	if l.p == nil {
		return n.deliver(n.self, &e)
	}
	return l.p.w.submit(e)
}

func (n *Node) submitOneWay(ctx context.Context, l *link, e wire.Envelope) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", wire.ErrCancelled, err)
	}
	return n.submit(l, e)
}

// call registers a correlation id, submits, and waits for exactly one
// terminal result.
func (n *Node) call(ctx context.Context, l *link, e wire.Envelope) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	deadline, hasDeadline := ctx.Deadline()
	if !hasDeadline {
		deadline = time.Now().Add(DefaultRequestTimeout)
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return nil, fmt.Errorf("%w: %w", wire.ErrTimeout, context.DeadlineExceeded)
	}
	e.TimeoutMs = uint32(min(wait.Milliseconds()+1, int64(^uint32(0))))
	corr := n.corr.Add(1)
	e.Corr = corr
	pipeID := ""
	if l.p != nil {
		pipeID = l.p.id
	}
	p := n.calls.add(corr, pipeID, l.rid)
	if err := n.submit(l, e); err != nil {
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			return nil, err
		}
		// Completed concurrently (peer lost, shutdown): take that result.
		r := <-p.done
		n.calls.release(p)
		return r.payload, r.err
	}
	// The pipe may have been dropped (and its calls failed) between the
	// target lookup and our registration, or the node may have failed every
	// pending call for shutdown: then nobody else will end this one.
	if lost, down := l.p != nil && l.p.getState() == pipeClosed, n.callsClosed.Load(); lost || down {
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			if down {
				return nil, wire.ErrShuttingDown
			}
			return nil, fmt.Errorf("%w: %s: connection closed", wire.ErrPeerLost, l.rid)
		}
	}
	// A context with a deadline already wakes us; only a call without one
	// needs a timer of its own (the default timeout).
	var timeout <-chan time.Time
	if !hasDeadline {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		timeout = timer.C
	}
	var r result
	select {
	case r = <-p.done:
	case <-ctx.Done():
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			return nil, ctxError(ctx.Err())
		}
		r = <-p.done
	case <-timeout:
		if n.calls.take(corr) != nil {
			n.calls.release(p)
			return nil, fmt.Errorf("%w: no reply from %s within %v", wire.ErrTimeout, l.rid, wait)
		}
		r = <-p.done
	}
	n.calls.release(p)
	if e.Channel != "" && l.p != nil {
		if r.headroom != nil {
			l.setHeadroom(r.headroom)
		} else if b := l.full[e.Channel]; b != nil && b.Load() {
			b.Store(false)
		}
	}
	return r.payload, r.err
}

func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", wire.ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", wire.ErrCancelled, err)
}

// ---- inbound -----------------------------------------------------------

// inbound is a request or send admitted into an owner's mailbox. It also
// carries the handler's Context and deadline, so a request costs one
// allocation here.
type inbound struct {
	env  wire.Envelope
	from *link
	hc   Context
	dc   deadlineCtx
}

// Size is what the owner's byte budget counts.
func (m *inbound) Size() int { return m.env.Size() }

// deliver admits a request or send into its owner. A refusal answers a
// remote request with an Error envelope (ErrBusy) and is returned for a
// local one, so both callers see the same terminal result.
func (n *Node) deliver(from *link, e *wire.Envelope) error {
	owner, err := n.ownerFor(e.Channel)
	if err == nil && n.admitPaused.Load() {
		err = fmt.Errorf("%w: admission paused: %d handlers are hung", wire.ErrBusy, n.hung.Load())
		owner = nil
	}
	if owner != nil {
		n.inflight.Add(1)
		err = owner.Tell(&inbound{env: *e, from: from})
		if err != nil {
			n.inflight.Add(-1)
			err = admissionError(err)
		}
	}
	if err == nil {
		return nil
	}
	if from.p != nil && e.Kind == wire.KindRequest {
		_ = from.p.w.control(outItem{env: wire.ErrorEnvelope(e.Corr, err)})
	}
	return err
}

// admissionError maps an owner's refusal to the caller-visible result.
func admissionError(err error) error {
	var full *mailbox.FullError
	if errors.As(err, &full) {
		return fmt.Errorf("%w: %s", wire.ErrBusy, full.Error()) // ErrBusy only: the same result a remote refusal gives
	}
	if errors.Is(err, actors.ErrStopped) {
		return fmt.Errorf("%w: %w", wire.ErrShuttingDown, err)
	}
	return err
}

func (n *Node) ownerFor(channel string) (*actors.Ref, error) {
	if channel == "" {
		return n.direct, nil
	}
	if co := n.channels[channel]; co != nil && co.ref != nil {
		return co.ref, nil
	}
	return nil, fmt.Errorf("%w: %w: %s", wire.ErrNoTarget, ErrUnknownChannel, channel)
}

// reply sends a reply or error envelope back to the caller's link. A reply
// larger than the caller's stated receive limit is refused here (the call
// ends ErrTooLarge): sending it would make the caller's transport close the
// whole connection.
func (n *Node) reply(to *link, e wire.Envelope) {
	if to.p == nil {
		n.complete(n.rid, &e)
		return
	}
	if err := wire.CheckLimit(e.Size(), to.recvLimit); err != nil {
		e = wire.ErrorEnvelope(e.Corr, fmt.Errorf("reply: %w", err))
	}
	_ = to.p.w.control(outItem{env: e})
}

// complete ends a pending call from a Reply or Error envelope.
func (n *Node) complete(from string, e *wire.Envelope) {
	r := result{from: from, headroom: e.Headroom}
	if e.Kind == wire.KindError {
		r.err = wire.ErrorOf(e.Code, string(e.Payload))
	} else {
		r.payload = e.Payload
	}
	if !n.calls.complete(e.Corr, r) {
		n.cnt.lateFrames.Add(1)
	}
}

// readRouter reads every inbound pipe of the ROUTER.
func (n *Node) readRouter() {
	for {
		msg, err := n.router.Recv()
		if err != nil {
			if n.ctx.Err() != nil {
				return
			}
			continue
		}
		if len(msg.Frames) != 2 {
			n.cnt.protocolErrors.Add(1)
			continue
		}
		id := string(msg.Frames[0])
		if v, ok := n.inbnd.Load(id); ok {
			n.onFrame(v.(*pipe), msg.Frames[1])
			continue
		}
		f, err := wire.DecodeFrame(msg.Frames[1])
		if err != nil || f.Type != wire.FrameHello {
			n.cnt.protocolErrors.Add(1)
			continue
		}
		if err := n.ref.Tell(&inboundHello{id: id, hello: f.Hello}); err != nil {
			n.cnt.handshakeRejects.Add(1)
		}
	}
}

// readDealer reads one outbound pipe.
func (n *Node) readDealer(p *pipe) {
	for {
		msg, err := p.dealer.Recv()
		if err != nil {
			_ = n.ref.Tell(&pipeFailed{p: p, err: fmt.Errorf("%w: %w", wire.ErrPeerLost, err)})
			return
		}
		if len(msg.Frames) != 1 {
			n.cnt.protocolErrors.Add(1)
			continue
		}
		n.onFrame(p, msg.Frames[0])
		if p.getState() == pipeClosed {
			return
		}
	}
}

// onFrame handles one frame read from a pipe: batches of a ready pipe are
// dispatched here; anything else goes to the mesh actor in order.
func (n *Node) onFrame(p *pipe, raw []byte) {
	p.lastRead.Store(time.Now().UnixNano())
	f, err := wire.DecodeFrame(raw)
	if err != nil {
		n.cnt.protocolErrors.Add(1)
		_ = n.ref.Tell(&pipeFailed{p: p, err: err})
		return
	}
	switch p.getState() {
	case pipeReady:
		if f.Type == wire.FrameBatch {
			n.dispatch(p, f.Batch)
			return
		}
	case pipeClosed:
		n.cnt.lateFrames.Add(1)
		return
	}
	hf := &handshakeFrame{p: p, f: f}
	if p.outbound {
		// Wait until the mesh actor has applied it, so a batch that follows
		// the handshake is never dispatched before the pipe is ready.
		hf.done = make(chan struct{})
	}
	if err := n.ref.Tell(hf); err != nil {
		return
	}
	if hf.done != nil {
		select {
		case <-hf.done:
		case <-p.closed:
		case <-n.ctx.Done():
		}
	}
}

// dispatch hands a ready pipe's envelopes to their owners.
func (n *Node) dispatch(p *pipe, envs []wire.Envelope) {
	l := p.link
	for i := range envs {
		e := &envs[i]
		switch e.Kind {
		case wire.KindRequest, wire.KindSend:
			_ = n.deliver(l, e)
		case wire.KindReply, wire.KindError:
			n.complete(l.rid, e)
		default:
			if l.peer != nil {
				_ = l.peer.Tell(&controlEnv{env: *e})
			}
		}
	}
}

// ---- stop --------------------------------------------------------------

// Stop shuts the node down (SPEC §8): new operations fail with
// ErrShuttingDown at once, in-flight calls get until ShutdownTimeout (or
// ctx) to finish, the rest end with ErrShuttingDown, peers get a goodbye,
// sockets close and every goroutine ends. Idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.state.Store(uint32(NodeStopping))
	deadline := time.Now().Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for n.calls.size() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			deadline = time.Now()
		case <-time.After(5 * time.Millisecond):
		}
	}
	// Discovery and the lease stop first: no topology change and no
	// descriptor write after this point; then the descriptor goes.
	n.dcancel()
	if n.lease != nil {
		<-n.lease.done
		n.lease.remove()
	}
	n.callsClosed.Store(true)
	n.calls.failAll(wire.ErrShuttingDown)
	n.hcancel()
	// Handlers that honour their context return now; one that does not
	// cannot be stopped — wait for it only until the deadline, and say so.
	hdeadline := time.Now().Add(max(time.Until(deadline), 100*time.Millisecond))
	for n.running.Load() > 0 && time.Now().Before(hdeadline) {
		time.Sleep(time.Millisecond)
	}
	if r := n.running.Load(); r > 0 {
		n.log.Warn().Int64("running", r).Msg("handlers still running at shutdown; they ignore their context")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = n.ref.Request(sctx, &stopMsg{})
	err := n.ref.Stop(sctx)
	n.goMu.Lock()
	n.goDone = true
	n.goMu.Unlock()
	n.cancel()
	_ = n.router.Close()
	n.wg.Wait()
	n.state.Store(uint32(NodeStopped))
	n.log.Info().Msg("meshnode stopped")
	return err
}

// ---- helpers -----------------------------------------------------------

// jitter returns d scaled by a random factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}
