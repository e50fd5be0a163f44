// Package zlink is the public entry point of ZLink for Go: an options
// builder for the MeshNodes of one process (RouteMesh), the Location Store
// and the other topologies, Start, and the running Host.
//
//	var JoinMatch = wire.NewPacket[JoinReq, JoinResult]("JoinMatch") // typed packet
//
//	opts := zlink.NewOptions()
//	mesh := opts.AddRouteMesh("game-mesh").Listen("tcp://127.0.0.1:7001")
//	routemesh.OnRequest(mesh.Channel("match").Server().SetWeight(100), JoinMatch,
//		func(c *routemesh.Context, req JoinReq) (JoinResult, error) { ... })
//	host, err := zlink.Start(ctx, opts) // every startup check happens here
//	defer host.Stop(ctx)
//
//	node := host.Mesh("game-mesh")
//	err = node.WaitReady(ctx, "match") // a ready target, instead of a retry loop
//	res, err := routemesh.Call(ctx, node, "match", JoinMatch, JoinReq{Player: "p1"})
//
// The byte-slice forms (HandleRequest, Node.Call) remain for tools and
// proxies. Runnable programs are in examples/.
//
// It owns the wiring between packages; the behaviour lives in routemesh/,
// location/, actors/ and supervisor/. It must not hold any state of its own
// beyond the Host's handles.
package zlink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/internal/faults"
	"github.com/zlink-go/zlink/internal/meshbridge"
	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh"
	"github.com/zlink-go/zlink/supervisor"
)

// The terminal results of a call (Node.Call, Request, Send, Multicast
// members, the typed helpers), matchable with errors.Is. A remote node's
// result crosses the wire as a code and is rebuilt as the same value here.
var (
	ErrNoTarget     = zerr.ErrNoTarget     // no positive-weight candidate, or unknown direct target
	ErrTimeout      = zerr.ErrTimeout      // no reply before the deadline (also matches context.DeadlineExceeded)
	ErrMailboxFull  = zerr.ErrMailboxFull  // an owner's message or byte budget is spent (*mailbox.FullError)
	ErrBusy         = zerr.ErrBusy         // every candidate at capacity, or a full send queue
	ErrPeerLost     = zerr.ErrPeerLost     // the connection was lost after submit; outcome unknown
	ErrTooLarge     = zerr.ErrTooLarge     // over the receiver's stated limit or the wire's limit
	ErrHandler      = zerr.ErrHandler      // the handler failed or panicked; its message is carried
	ErrCancelled    = zerr.ErrCancelled    // the caller's context ended the call
	ErrShuttingDown = zerr.ErrShuttingDown // the node no longer admits new operations
	// ErrUnknownPacket: the target has no handler for the packet name.
	ErrUnknownPacket = zerr.ErrUnknownPacket
	// ErrBadPayload: a payload did not decode into the packet's Go type
	// (the typed helpers routemesh.Call, CallNode, OnRequest, ...).
	ErrBadPayload = zerr.ErrBadPayload
	// ErrProtocol: a peer sent a malformed frame or envelope.
	ErrProtocol = zerr.ErrProtocol
	// ErrStopped: a Tell or Request on an actor (Node.Ref) that has stopped.
	ErrStopped = zerr.ErrStopped
)

// Errors of a MeshNode's own operations.
var (
	// ErrNoChannelRole: a call on a ChannelName the node has no role on.
	ErrNoChannelRole = routemesh.ErrNoChannelRole
	// ErrUnknownChannel: Node.SetWeight on a ChannelName the node serves
	// no Server role for (a *routemesh.ConfigError, also matching ErrConfig).
	ErrUnknownChannel = routemesh.ErrUnknownChannel
	// ErrDrainTimeout: Node.Drain ended with submitted work still running.
	ErrDrainTimeout = routemesh.ErrDrainTimeout
	// ErrNodeFailed: the node is in its terminal Failed state; every
	// pending and later call ends with it.
	ErrNodeFailed = routemesh.ErrNodeFailed
	// ErrRIDInUse: Start refused a fixed RID that a live node of the mesh
	// holds (a *routemesh.ConfigError, also matching ErrConfig).
	ErrRIDInUse = routemesh.ErrRIDInUse
	// ErrTLS matches every refusal of a mesh link by TLS (a peer's
	// last_error in status); the specific kinds follow.
	ErrTLS = routemesh.ErrTLS
	// ErrTLSPlaintext: the peer does not speak TLS (or this node does not).
	ErrTLSPlaintext = routemesh.ErrTLSPlaintext
	// ErrTLSUntrusted: the peer's certificate does not chain to the CA.
	ErrTLSUntrusted = routemesh.ErrTLSUntrusted
	// ErrTLSIdentity: the peer's certificate names another identity.
	ErrTLSIdentity = routemesh.ErrTLSIdentity
)

// Results of Spot calls and operations (package spot), besides the
// terminal results above.
var (
	ErrCycle          = zerr.ErrCycle          // the call would wait on a turn waiting on it; the handler did not run
	ErrFenced         = zerr.ErrFenced         // the owner lost its lease during the call; the turn may or may not have run
	ErrOutcomeUnknown = zerr.ErrOutcomeUnknown // the turn ran; whether its ReplyAfterWrite save is durable is unknown
	ErrRole           = zerr.ErrRole           // the node's object role does not allow it
	ErrNotEnabled     = zerr.ErrNotEnabled     // the Spot runtime is not attached to the MeshNode
	ErrUnknownKind    = zerr.ErrUnknownKind    // the Spot kind is not registered on the node
	ErrNoOwner        = zerr.ErrNoOwner        // spot.Owner: nobody owns the Spot (spot.ErrNotFound)
	ErrSpotConfig     = zerr.ErrSpotConfig     // a refused Spot kind or runtime setting (also matches ErrConfig)
)

// Startup refusals. Every refusal of Start's validation is a
// *routemesh.ConfigError matching ErrConfig and one specific sentinel below
// (Node.SetWeight's refusals too).
var (
	// ErrConfig matches every configuration refusal.
	ErrConfig             = routemesh.ErrConfig
	ErrDuplicateMesh      = routemesh.ErrDuplicateMesh      // a MeshName registered twice
	ErrDuplicateChannel   = routemesh.ErrDuplicateChannel   // a ChannelName twice on one RouteMesh
	ErrTopologyConflict   = routemesh.ErrTopologyConflict   // a ChannelName on two physical topologies
	ErrWeightRange        = routemesh.ErrWeightRange        // a weight outside 0..10000
	ErrDirectOnObjectRole = routemesh.ErrDirectOnObjectRole // a Node-direct handler on an Object Client
	ErrRIDConflict        = routemesh.ErrRIDConflict        // a fixed RID and a RID prefix both set
	ErrNeedsLocationStore = zerr.ErrNeedsLocationStore      // an automatic topology without a Location Store
	ErrInvalid            = routemesh.ErrInvalid            // any other bad MeshNode setting
)

// Fanout errors: refusals at Start (through the startup validation, or from
// fanout.StartPublisher / StartSubscriber when Start runs them) and the
// results of Publisher.Publish.
var (
	ErrFanoutSourceConflict = fanout.ErrSourceConflict // a subscriber both automatic and manual
	ErrFanoutNoSource       = fanout.ErrNoSource       // a subscriber neither automatic nor manual
	ErrFanoutInvalidConfig  = fanout.ErrInvalidConfig  // a fanout setting missing or out of range
	ErrFanoutReservedTopic  = fanout.ErrReservedTopic  // a topic starting with byte 0xFF
	ErrFanoutClosed         = fanout.ErrClosed         // the publisher or subscriber was closed
)

// Options collects the registrations of one process. Nothing is checked
// until Start.
type Options struct {
	meshes      []*routemesh.MeshBuilder
	publishers  []fanout.PublisherConfig
	subscribers []fanout.SubscriberConfig
	store       location.Store
	logger      zerolog.Logger
}

// NewOptions returns empty options with a no-op logger.
func NewOptions() *Options { return &Options{logger: zerolog.Nop()} }

// AddRouteMesh registers the MeshNode of MeshName name.
func (o *Options) AddRouteMesh(name string) *routemesh.MeshBuilder {
	b := routemesh.NewMeshBuilder(name)
	o.meshes = append(o.meshes, b)
	return b
}

// SetLocationStore configures the Location Store explicitly: the Redis store
// for meshes that span processes, or the in-memory store for several
// MeshNodes inside this one process.
func (o *Options) SetLocationStore(s location.Store) *Options { o.store = s; return o }

// SetLogger injects the logger used by every component.
func (o *Options) SetLogger(l zerolog.Logger) *Options { o.logger = l; return o }

// AddFanoutPublisher registers a classic fanout publisher that Start runs.
// With a Location Store configured (here or in cfg.Store) it is automatic:
// it publishes a fanout publisher descriptor; it never dials anything.
func (o *Options) AddFanoutPublisher(cfg fanout.PublisherConfig) *Options {
	o.publishers = append(o.publishers, cfg)
	return o
}

// AddFanoutSubscriber registers a classic fanout subscriber that Start
// runs: automatic (publisher descriptors of its channel from the Location
// Store) or manual (cfg.Endpoints), never both.
func (o *Options) AddFanoutSubscriber(cfg fanout.SubscriberConfig) *Options {
	o.subscribers = append(o.subscribers, cfg)
	return o
}

// Topology returns the registrations as the validator sees them.
func (o *Options) Topology() *routemesh.Topology {
	var fanouts []routemesh.FanoutReg
	for _, p := range o.publishers {
		fanouts = append(fanouts, routemesh.FanoutReg{Channel: p.Channel, Publisher: true, Automatic: p.Store != nil || o.store != nil})
	}
	for _, s := range o.subscribers {
		fanouts = append(fanouts, routemesh.FanoutReg{Channel: s.Channel, Automatic: s.Automatic, Endpoints: s.Endpoints})
	}
	t := &routemesh.Topology{Fanouts: fanouts, HasLocationStore: o.store != nil}
	for _, m := range o.meshes {
		t.Meshes = append(t.Meshes, m.Config())
	}
	return t
}

// Host is a running process: its actor system, its MeshNodes and its tree.
type Host struct {
	failed      failWatch
	started     atomic.Bool // the host actor started once (later starts are restarts)
	sys         *actors.System
	root        *actors.Ref
	meshes      map[string]*routemesh.Node
	order       []string
	publishers  map[string]*fanout.Publisher
	subscribers map[string]*fanout.Subscriber
}

// Start validates every registration (a refusal is a *routemesh.ConfigError
// matching ErrConfig), then starts the actor system and each MeshNode.
func Start(ctx context.Context, o *Options) (*Host, error) {
	if err := o.Topology().Validate(); err != nil {
		return nil, err
	}
	sys := actors.NewSystem(actors.Config{Name: "zlink", Logger: o.logger})
	h := &Host{sys: sys, meshes: map[string]*routemesh.Node{},
		publishers: map[string]*fanout.Publisher{}, subscribers: map[string]*fanout.Subscriber{}}
	// A MeshNode whose mesh actor keeps failing past its restart intensity
	// is not escalated further: the host turns it into the node's visible,
	// terminal Failed state.
	sup := supervisor.DefaultConfig()
	sup.OnGiveUp = h.failed.fail
	// The host actor receives lifecycle messages and its children's spawn
	// requests (control, one per spawn): its budget is that bound.
	root, err := sys.Spawn(actors.Spec{
		Name: "host", Kind: "host", Supervisor: sup, MaxMessages: 64,
		Producer: func() actors.Actor { return &hostActor{h: h} },
	})
	if err != nil {
		_ = sys.Shutdown(ctx)
		return nil, fmt.Errorf("zlink: spawn host: %w", err)
	}
	h.root = root
	for _, b := range o.meshes {
		cfg := b.Config()
		if isNop(cfg.Logger) {
			cfg.Logger = o.logger
		}
		n, err := routemesh.Start(ctx, cfg, routemesh.Deps{System: sys, Parent: root, Store: o.store})
		if err != nil {
			_ = h.Stop(context.Background())
			return nil, err
		}
		h.meshes[cfg.Mesh] = n
		h.order = append(h.order, cfg.Mesh)
		h.failed.watch(n)
	}
	if err := h.startFanout(ctx, o); err != nil {
		_ = h.Stop(context.Background())
		return nil, err
	}
	return h, nil
}

// startFanout starts the fanout registrations, each publisher and
// subscriber a supervised actor under /host/fanout:<channel> (independent
// of every MeshNode; see host_fanout.go).
func (h *Host) startFanout(ctx context.Context, o *Options) error {
	sups := map[string]*actors.Ref{}
	for _, cfg := range o.publishers {
		if cfg.Store == nil {
			cfg.Store = o.store
		}
		if isNop(cfg.Logger) {
			cfg.Logger = o.logger
		}
		sup, err := h.fanoutSupervisor(sups, cfg.Channel)
		if err != nil {
			return err
		}
		cfg.System, cfg.Parent = h.sys, sup
		p, err := fanout.StartPublisher(ctx, cfg)
		if err != nil {
			return fanoutStartError("publisher", cfg.Channel, err)
		}
		h.publishers[cfg.Channel] = p
	}
	for _, cfg := range o.subscribers {
		if cfg.Automatic && cfg.Store == nil {
			cfg.Store = o.store
		}
		if isNop(cfg.Logger) {
			cfg.Logger = o.logger
		}
		sup, err := h.fanoutSupervisor(sups, cfg.Channel)
		if err != nil {
			return err
		}
		cfg.System, cfg.Parent = h.sys, sup
		s, err := fanout.StartSubscriber(ctx, cfg)
		if err != nil {
			return fanoutStartError("subscriber", cfg.Channel, err)
		}
		h.subscribers[cfg.Channel] = s
	}
	return nil
}

// fanoutStartError makes a configuration refusal of fanout a
// *routemesh.ConfigError (so it matches ErrConfig like every other startup
// refusal, and still its fanout sentinel); other failures are wrapped.
func fanoutStartError(role, channel string, err error) error {
	for _, cfgErr := range []error{fanout.ErrInvalidConfig, fanout.ErrNoSource, fanout.ErrSourceConflict,
		fanout.ErrReservedTopic, zerr.ErrNeedsLocationStore} {
		if errors.Is(err, cfgErr) {
			return &routemesh.ConfigError{Channel: channel, Err: err, Detail: "fanout " + role}
		}
	}
	return fmt.Errorf("zlink: fanout %s %s: %w", role, channel, err)
}

// Publisher returns the fanout publisher of channel, or nil.
func (h *Host) Publisher(channel string) *fanout.Publisher { return h.publishers[channel] }

// Subscriber returns the fanout subscriber of channel, or nil.
func (h *Host) Subscriber(channel string) *fanout.Subscriber { return h.subscribers[channel] }

func isNop(l zerolog.Logger) bool { return l.GetLevel() == zerolog.Disabled }

// Mesh returns the MeshNode of MeshName name, or nil.
func (h *Host) Mesh(name string) *routemesh.Node { return h.meshes[name] }

// Meshes returns the MeshNodes in registration order.
func (h *Host) Meshes() []*routemesh.Node {
	out := make([]*routemesh.Node, 0, len(h.order))
	for _, name := range h.order {
		out = append(out, h.meshes[name])
	}
	return out
}

// The chaos tests' and drills' fault injection (internal/faults), not part
// of the public API.
func init() {
	faults.SetInjectPanic(func(host any, path, reason string) error {
		h, ok := host.(*Host)
		if !ok || h == nil {
			return fmt.Errorf("%w: faults: not a *zlink.Host", ErrConfig)
		}
		return h.sys.InjectPanic(path, reason)
	})
}

// Tree returns a copied snapshot of the live supervision tree.
func (h *Host) Tree() supervisor.Node { return h.sys.Registry().Snapshot() }

// Stop stops every MeshNode (Node.Stop), then the fanout publishers and
// subscribers, then the actor system.
// Idempotent.
func (h *Host) Stop(ctx context.Context) error {
	var errs []error
	names := append([]string(nil), h.order...)
	sort.Strings(names)
	for _, name := range names {
		if err := h.meshes[name].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// The fanout:<channel> supervisors stop with the actor system.
	for _, s := range h.subscribers {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range h.publishers {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := h.sys.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hostActor is the root of the process's tree. It holds no state: the
// MeshNodes outlive it. protoactor stops its children when it restarts, so
// every incarnation after the first respawns the mesh actor of each node,
// which rebuilds the node from its configuration.
type hostActor struct {
	h *Host
}

func (a *hostActor) Receive(c *actors.Context) {
	if _, ok := c.Message().(*actors.Started); !ok {
		return
	}
	if !a.h.started.CompareAndSwap(false, true) {
		// Respawning waits for this actor to serve the spawn requests, so
		// it runs beside it, never inside Receive.
		go a.h.respawnMeshes()
	}
}

// respawnMeshes gives every running node a new mesh actor after the host
// actor restarted; a node whose mesh actor cannot be spawned fails.
func (h *Host) respawnMeshes() {
	for _, n := range h.Meshes() {
		if err := meshbridge.Respawn(n); err != nil {
			meshbridge.Fail(n, err)
			continue
		}
		h.failed.watch(n)
	}
}
